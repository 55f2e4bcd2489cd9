"""prepbench's own steps as a PyTorch user writes them, for the `torch` loader: torchvision's
JPEG decoder and resize, Pillow for PNG, tensor arithmetic for the rest; the audio steps in
`_torch_audio` (soundfile, `torch.fft`).

Each op takes and gives the field its native step does, in prepbench's layout (an image is
[height, width, channels]), so that a store made by prepbench's offline phase feeds them at any
split point; inside, images are viewed channels-first where torchvision wants them (a view, not
a copy). Random ops draw from the native step's own generator (`native.Rng`, seeded from the
run's seed, the sample, the epoch and the step), so a crop takes the same window natively and
here; a PyTorch job would draw from torch's generator, at the same cost.

Where this code cannot give the native step's bytes (another JPEG decoder, torchvision's
rounding where prepbench truncates as the paper's tf.cast does), the op says by how much it may
differ, in 8-bit levels (`levels`: per value, on average), and what the ops after it multiply
a difference by (`gain`): `--verify` compares each output with native processing within what
the chain adds up to (`tolerance`), allowing `BEYOND` of the values past the per-value bound
(a JPEG decoder's rare far pixels).
"""

import importlib
import io
import warnings

from ._forms import exp_fields, tolerance, within  # noqa: F401 - the loader asks them here

#: Ops implemented here, with the parameters they refuse; the Rust side keeps the same list
#: (`harness/src/measure/online/torch/steps.rs`), and a test ties them.
OPS = ("decode_jpeg", "decode_png", "decode_npy", "resize_shorter", "pixel_center",
       "grayscale", "normalize", "random_crop", "random_hflip", "decode_audio", "stft",
       "magnitude", "mel", "log", "read_cream_hour", "window", "nilm_features", "extract_text",
       "bpe_encode", "embed")


# torch warns each time it views read-only memory (a stored record's view of immutable bytes,
# a JPEG's bytes); the ops here never write into their input. Set once, for the warnings this
# module's calls raise only, rather than a catch_warnings block around every sample.
warnings.filterwarnings("ignore", message=r"The given (buffer|NumPy array) is not writable",
                        category=UserWarning, module=__name__)


def _torch():
    import torch

    return torch


def _tensor(value):
    """A field's value as a tensor, sharing its memory (a NumPy array from a store, or the
    tensor an earlier op made)."""
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return value
    import numpy as np

    return torch.from_numpy(np.asarray(value))


def _image(value, op):
    tensor = _tensor(value)
    if tensor.dim() != 3:
        raise ValueError(f"{op}: expected an image [height, width, channels], got shape "
                         f"{list(tensor.shape)}")
    return tensor


class Op:
    """One step: reads `source`, writes `to`; `levels` and `gain` as the module says."""

    levels = (0.0, 0.0)
    gain = 1.0
    random = False
    #: The modules the op calls, imported when it is made: in the loader's main process,
    #: before the DataLoader starts its workers, as a training script imports them at its top.
    #: Imported on a worker's first sample instead, each epoch's fresh workers paid for it
    #: inside the timed epoch (torchvision: 7 s per epoch on a 16-core machine, 0.4 s here).
    imports = ("torch",)

    def __init__(self, params):
        self.params = params
        self.source = params.get("field") or params.get("from")
        self.to = params.get("field") or params.get("to")


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class DecodeJpeg(Op):
    # torchvision.io (libjpeg-turbo) against prepbench's decoder: 0.33 levels apart on average
    # on photographs (docs/decisions.md); a few pixels of an image further (up to 34 levels on
    # generated images, under 0.02 % of them beyond 8).
    levels = (8.0, 1.0)
    imports = ("torch", "torchvision.io", "PIL.Image")

    def __call__(self, data):
        if bytes(data[:8]) == PNG_SIGNATURE:
            # A PNG under a JPEG's name (ImageNet holds one), read as Pillow reads it, as
            # ImageFolder's loader does and prepbench's own decode_jpeg.
            return _pillow_rgb(data)
        torch = _torch()
        from torchvision.io import ImageReadMode, decode_jpeg

        encoded = torch.frombuffer(data, dtype=torch.uint8)
        try:
            return decode_jpeg(encoded, mode=ImageReadMode.RGB).permute(1, 2, 0)
        except RuntimeError:
            # torchvision's decoder before 0.19 refuses a four-channel (CMYK or YCCK) file
            # ("Unsupported color conversion request"): ImageNet holds 22. Pillow converts it
            # as prepbench's decoder and TensorFlow's do (the same pixels on Pillow's own
            # CMYK files); anything else torchvision refuses stays refused.
            cmyk = _pillow_rgb(data, cmyk_jpeg=True)
            if cmyk is None:
                raise
            return cmyk


def _pillow_rgb(data, cmyk_jpeg=False):
    """An image file's pixels in RGB as Pillow reads and converts them. With `cmyk_jpeg`, only
    a CMYK (or YCCK) JPEG's: None for any other file (Pillow reads the header to tell) and for
    one Pillow cannot read."""
    import numpy as np
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            if cmyk_jpeg and (image.format, image.mode) != ("JPEG", "CMYK"):
                return None
            return _tensor(np.asarray(image.convert("RGB")))
    except (OSError, ValueError):
        if cmyk_jpeg:
            return None
        raise


class DecodePng(Op):
    # Pillow reads a 16-bit PNG's high byte where prepbench rounds v * 255 / 65535.
    levels = (1.0, 1.0)
    imports = ("numpy", "PIL.Image", "torch")

    def __call__(self, data):
        return _pillow_rgb(data)


class DecodeNpy(Op):
    imports = ("numpy", "torch")

    def __call__(self, data):
        import numpy as np

        return _tensor(np.load(io.BytesIO(data), allow_pickle=False))


def target_dims(height, width, size):
    """The shorter side `size`, the other scaled and truncated (torchvision's Resize(int))."""
    if height <= width:
        return size, max(1, width * size // height)
    return max(1, height * size // width), size


class ResizeShorter(Op):
    # torchvision rounds to uint8 where prepbench truncates (the paper's tf.cast), and sums in
    # another order: one level at most.
    levels = (1.0, 1.0)
    imports = ("torch", "torchvision.transforms.functional")

    def __call__(self, image):
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms.functional import resize

        image = _image(image, "resize_shorter")
        height, width = image.shape[:2]
        size = target_dims(height, width, self.params["size"])
        out = resize(image.permute(2, 0, 1), list(size),
                     interpolation=InterpolationMode.BILINEAR,
                     antialias=bool(self.params["antialias"]))
        return out.permute(1, 2, 0)


class PixelCenter(Op):
    def __init__(self, params):
        super().__init__(params)
        self.gain = 1.0 / abs(params["scale"])

    def __call__(self, image):
        torch = _torch()
        image = _tensor(image)
        if image.dtype != torch.uint8:
            raise TypeError(f"field `{self.source}` is {image.dtype}, expected uint8")
        return image.float() / self.params["scale"] + self.params["offset"]


class Grayscale(Op):
    # torchvision's weights are 0.2989, 0.587, 0.114 and it truncates; Pillow's (prepbench's)
    # are 0.299, 0.587, 0.114 in fixed point, rounded.
    levels = (1.0, 1.0)
    imports = ("torch", "torchvision.transforms.functional")

    def __call__(self, image):
        from torchvision.transforms.functional import rgb_to_grayscale

        image = _image(image, "grayscale")
        if image.shape[2] != 3:
            raise ValueError(f"field `{self.source}` has {image.shape[2]} channels, grayscale "
                             "needs 3 (RGB)")
        return rgb_to_grayscale(image.permute(2, 0, 1)).permute(1, 2, 0)


class Normalize(Op):
    def __init__(self, params):
        super().__init__(params)
        self.gain = abs(params["scale"]) / min(abs(s) for s in params["std"])
        self.constants = None

    def __call__(self, image):
        torch = _torch()
        image = _image(image, "normalize")
        if image.shape[2] != len(self.params["mean"]):
            raise ValueError(f"field `{self.source}` has {image.shape[2]} channels, mean/std "
                             f"have {len(self.params['mean'])}")
        if self.constants is None:
            self.constants = (torch.tensor(self.params["mean"], dtype=torch.float32),
                              torch.tensor(self.params["std"], dtype=torch.float32))
        mean, std = self.constants
        return (image.float() * self.params["scale"] - mean) / std


class RandomCrop(Op):
    random = True

    def __call__(self, image, sample_id, epoch, seed):
        image = _image(image, "random_crop")
        height, width = image.shape[:2]
        ch, cw = self.params["height"], self.params["width"]
        if height < ch or width < cw:
            raise ValueError(f"cannot crop {ch}x{cw} from a {height}x{width} image in "
                             f"`{self.source}`")
        rng = self.rng(epoch, sample_id, seed)
        top = rng.index(height - ch + 1)
        left = rng.index(width - cw + 1)
        return image[top:top + ch, left:left + cw]


class RandomHflip(Op):
    random = True

    def __call__(self, image, sample_id, epoch, seed):
        image = _image(image, "random_hflip")
        if self.rng(epoch, sample_id, seed).unit() >= self.params["p"]:
            return image
        return image.flip(1)


class ReadCreamHour(Op):
    """An hour's HDF5 file to its calibrated [2, samples] float64 signal and its rate: h5py and
    NumPy, as the CREAM dataset's own loader reads it (`_nilm.parse_hour`)."""

    imports = ("torch", "h5py")

    def __init__(self, params):
        super().__init__(params)
        self.source = params.get("from") or "data"
        self.to = params.get("to") or "signal"
        self.offsets = str(params.get("offsets") or "per_period").encode()

    def __call__(self, data):
        from ._nilm import parse_hour

        torch = _torch()
        signal, rate = parse_hour(data, self.offsets)
        return {self.to: torch.from_numpy(signal),
                "sample_rate": torch.tensor(int(rate), dtype=torch.int32)}


class Window(Op):
    """`window`, the fan-out step: a [channels, samples] field cut into consecutive windows
    [channels, length] (views of it; a partial last one dropped), each a sample carrying the
    other fields. The loader's dataset yields them one by one (`expand`), as an
    IterableDataset over hours does."""

    fans_out = True

    def __init__(self, params):
        super().__init__(params)
        self.field = params.get("field") or "signal"
        self.length = int(params["length"])
        self.hop = int(params.get("hop") or self.length)

    def expand(self, fields):
        """The windows' fields, in order."""
        signal = _tensor(fields[self.field])
        if signal.dim() != 2:
            raise ValueError(f"window: field `{self.field}` has shape {list(signal.shape)}, "
                             "expected [channels, samples]")
        count = 0 if signal.shape[1] < self.length else \
            1 + (signal.shape[1] - self.length) // self.hop
        return [dict(fields, **{self.field: signal[:, w * self.hop:w * self.hop + self.length]})
                for w in range(count)]


class NilmFeatures(Op):
    """NILM's per-period features in float64 tensor arithmetic (`_tf_steps.NilmFeatures` says
    what they are); float64 rounding apart from native sums."""

    def __init__(self, params):
        super().__init__(params)
        self.source = params.get("from") or "signal"
        self.to = params.get("to") or "features"

    def __call__(self, signal):
        torch = _torch()
        signal = _tensor(signal)
        period, periods = int(self.params.get("period", 128)), int(self.params.get("periods", 500))
        n = period * periods
        if signal.dim() != 2 or signal.shape[0] != 2 or signal.dtype != torch.float64:
            raise ValueError(f"field `{self.source}` is {signal.dtype} {list(signal.shape)}, "
                             "expected float64 [2, samples] (voltage, current)")
        if signal.shape[1] < n:
            raise ValueError(f"a window of {signal.shape[1]} samples is shorter than {periods} "
                             f"periods of {period}")
        voltage = signal[0, :n].reshape(periods, period)
        current = signal[1, :n].reshape(periods, period)
        power = (voltage * current).sum(dim=1) / period
        rms = ((current * current).sum(dim=1) / period).sqrt()
        return torch.stack([power, rms, torch.cumsum(rms - rms.sum() / periods, dim=0)])


# The audio steps' forms, which need `Op` above.
from ._torch_audio import DecodeAudio, Log, Magnitude, Mel, Stft  # noqa: E402
from ._torch_text import BpeEncode, Embed, ExtractText  # noqa: E402

CLASSES = {
    "decode_jpeg": DecodeJpeg,
    "decode_png": DecodePng,
    "decode_npy": DecodeNpy,
    "resize_shorter": ResizeShorter,
    "pixel_center": PixelCenter,
    "grayscale": Grayscale,
    "normalize": Normalize,
    "random_crop": RandomCrop,
    "random_hflip": RandomHflip,
    "decode_audio": DecodeAudio,
    "stft": Stft,
    "magnitude": Magnitude,
    "mel": Mel,
    "log": Log,
    "read_cream_hour": ReadCreamHour,
    "window": Window,
    "nilm_features": NilmFeatures,
    "extract_text": ExtractText,
    "bpe_encode": BpeEncode,
    "embed": Embed,
}
assert tuple(CLASSES) == OPS


def make(op, params, rng):
    """The step `op` with its (canonical) parameters; `rng(epoch, sample_id, seed)` gives the
    generator a random op draws from for a sample."""
    step = CLASSES[op](params)
    step.rng = rng
    for name in step.imports:
        importlib.import_module(name)
    return step
