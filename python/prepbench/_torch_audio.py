"""The paper's audio steps as a PyTorch user writes them, for the `torch` loader: MP3, FLAC,
WAV and Vorbis read by soundfile (libsndfile: mpg123, libFLAC, libvorbis) from the bytes in
memory, mixed down to mono and rounded to int16 as prepbench does; the STFT framed as
tf.signal frames it (`unfold` by frame length and hop, the periodic Hann window, `torch.fft.rfft`
zero-padding each frame at its end to the FFT size: `torch.stft` frames by the FFT size and
centres the window, which is not the paper's STFT); magnitude; tf.signal's mel filterbank
built in NumPy from its definition (HTK mel scale, triangles between evenly spaced mel edges,
no DC band) and applied by a matrix product; log.

Bounds as `_torch_steps` says: PCM differences in int16 levels, carried through the linear
steps by their gains (the STFT's is its window's sum over 32768 for int16 input, set on each
call from what it is given), and a log compared as exp(value) (`_forms.exp_fields`).
"""

import io

from ._torch_steps import Op, _tensor, _torch


class DecodeAudio(Op):
    # libsndfile's decoders against prepbench's (symphonia): FLAC and WAV exact; MP3 (mpg123)
    # at most 1 int16 level apart, 0.0003 on average (40 generated Common Voice clips), the
    # bounds tensorflow-io's decoder is held to.
    levels = (1.0, 0.05)
    imports = ("numpy", "soundfile", "torch")

    def __init__(self, params):
        super().__init__(params)
        self.source = params.get("from") or "data"
        self.to = params.get("to") or "audio"
        if str(params.get("format") or "auto") in ("flac", "wav"):
            self.levels = (0.0, 0.0)

    def __call__(self, data):
        import numpy as np
        import soundfile

        torch = _torch()
        pcm, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
        channels = pcm.shape[1]
        # Mixed down as natively: the channels' sum times 1 / channels, in float32.
        mono = pcm.sum(axis=1, dtype=np.float32) * np.float32(1.0 / channels)
        limit = float(self.params.get("max_seconds") or 10800.0)
        if len(mono) > limit * rate:
            raise ValueError(f"{len(mono) / rate:.0f} s of audio, more than max_seconds "
                             f"({limit:g})")
        if str(self.params.get("dtype") or "int16") == "int16":
            mono = np.clip(np.round(mono * np.float32(32768.0)), -32768, 32767).astype(np.int16)
        return {self.to: torch.from_numpy(mono),
                "sample_rate": torch.tensor(int(rate), dtype=torch.int32)}


class Stft(Op):
    imports = ("torch",)

    def __init__(self, params):
        super().__init__(params)
        self.source = params.get("from") or "audio"
        self.to = params.get("to") or "spectrogram"
        self.frame = int(params["frame_length"])
        self.hop = int(params["hop"])
        fft = params.get("fft_size")
        self.fft = int(fft) if fft else 1 << (self.frame - 1).bit_length()
        self.window = self._window(str(params.get("window") or "hann"))
        self.window_sum = float(self.window.sum())
        self.gain = self.window_sum / 32768.0  # int16 PCM, as the paper's chains give it

    def _window(self, kind):
        torch = _torch()
        if kind == "hann":
            return torch.hann_window(self.frame, periodic=True)
        if kind == "hann_symmetric":
            return torch.hann_window(self.frame, periodic=False)
        return torch.ones(self.frame)

    def __call__(self, pcm):
        torch = _torch()
        pcm = _tensor(pcm)
        if pcm.dim() != 1:
            raise ValueError(f"field `{self.source}` has shape {list(pcm.shape)}, expected "
                             "mono PCM [samples]")
        if pcm.dtype == torch.int16:
            signal, self.gain = pcm.float() / 32768.0, self.window_sum / 32768.0
        else:
            signal, self.gain = pcm.float(), self.window_sum
        center = str(self.params.get("center") or "none")
        if center != "none":
            pad = self.frame // 2
            mode = "constant" if center == "zeros" else "reflect"
            signal = torch.nn.functional.pad(signal.view(1, 1, -1), (pad, pad),
                                             mode=mode).view(-1)
        bins = self.fft // 2 + 1
        if signal.numel() < self.frame:
            return torch.zeros((0, bins, 2), dtype=torch.float32)
        frames = signal.unfold(0, self.frame, self.hop) * self.window
        spectrum = torch.fft.rfft(frames, n=self.fft)
        return torch.stack([spectrum.real, spectrum.imag], dim=-1).contiguous()


class Magnitude(Op):
    def __init__(self, params):
        super().__init__(params)
        self.source = self.to = params.get("field") or "spectrogram"

    def __call__(self, pairs):
        pairs = _tensor(pairs)
        return (pairs[..., 0] * pairs[..., 0] + pairs[..., 1] * pairs[..., 1]).sqrt()


def tf_mel_matrix(mels, bins, rate, lower, upper):
    """tf.signal.linear_to_mel_weight_matrix, from its definition, in float32 NumPy:
    [bins, mels]; band 0 (DC) has no weight."""
    import numpy as np

    f32 = np.float32

    def mel(hz):
        return f32(1127.0) * np.log1p(np.asarray(hz, f32) / f32(700.0))

    linear = np.linspace(0.0, rate / 2.0, bins, dtype=f32)[1:]
    spectrum = mel(linear)[:, None]
    edges = np.linspace(mel(lower), mel(upper), mels + 2, dtype=f32)
    low, centre, high = edges[:-2][None, :], edges[1:-1][None, :], edges[2:][None, :]
    rising = (spectrum - low) / (centre - low)
    falling = (high - spectrum) / (high - centre)
    weights = np.maximum(f32(0.0), np.minimum(rising, falling)).astype(f32)
    return np.concatenate([np.zeros((1, mels), f32), weights])


class Mel(Op):
    imports = ("numpy", "torch")

    def __init__(self, params):
        super().__init__(params)
        self.source = self.to = params.get("field") or "spectrogram"
        # bins -> (the matrix, the largest sum of one band's weights: the gain, set on each
        # call for the bins it is given; --verify's bounds are taken after the call).
        self.matrices = {}

    def _matrix(self, bins):
        if bins not in self.matrices:
            torch = _torch()
            matrix = tf_mel_matrix(int(self.params.get("bins") or 80), bins,
                                   int(self.params["sample_rate"]),
                                   float(self.params.get("lower_hz") or 125.0),
                                   float(self.params.get("upper_hz") or 3800.0))
            self.matrices[bins] = (torch.from_numpy(matrix), float(matrix.sum(axis=0).max()))
        return self.matrices[bins]

    def __call__(self, spectrogram):
        spectrogram = _tensor(spectrogram)
        if spectrogram.dim() != 2:
            raise ValueError(f"field `{self.source}` has shape {list(spectrogram.shape)}, "
                             "expected a spectrogram [frames, bins] (apply `magnitude` first)")
        matrix, self.gain = self._matrix(int(spectrogram.shape[1]))
        return spectrogram.float() @ matrix


class Log(Op):
    compared_as_exp = True

    def __init__(self, params):
        super().__init__(params)
        self.source = self.to = params.get("field") or "spectrogram"

    def __call__(self, values):
        torch = _torch()
        return torch.log(_tensor(values) + float(self.params.get("offset", 1e-8)))
