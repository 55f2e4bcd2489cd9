"""The paper's audio steps in TensorFlow ops, for the `tf-data` loader: MP3, FLAC and Vorbis
decoding by tensorflow-io (as the paper decoded MP3) and WAV by TensorFlow, the rate read from
each file's own header in string ops; `tf.signal.stft`, magnitude, `linear_to_mel_weight_matrix`
(tf.signal's filterbank, prepbench's `filterbank: tf`) and log. Bounds as `_tf_steps` says:
PCM in int16 levels, carried through the linear steps by their gains, and a log compared as
exp(value) (`_forms.exp_fields`).
"""

from ._tf_steps import Form, _tf


def _byte(data, at):
    """The byte of a scalar string tensor at `at`, as int32."""
    tf = _tf()
    return tf.cast(tf.io.decode_raw(tf.strings.substr(data, at, 1), tf.uint8)[0], tf.int32)


def _mp3_rate(data):
    """The sample rate in an MP3's first frame header (after an ID3v2 tag, if any)."""
    tf = _tf()
    b = lambda at: _byte(data, at)  # noqa: E731
    tagged = tf.equal(tf.strings.substr(data, 0, 3), b"ID3")
    tag = tf.where(tagged,
                   10 + (b(6) & 0x7F) * 2097152 + (b(7) & 0x7F) * 16384 + (b(8) & 0x7F) * 128
                   + (b(9) & 0x7F) + tf.where((b(5) & 0x10) > 0, 10, 0), 0)
    first, second, third = b(tag), b(tag + 1), b(tag + 2)
    tf.debugging.assert_equal(tf.logical_and(tf.equal(first, 0xFF),
                                             tf.equal(second & 0xE0, 0xE0)), True,
                              message="decode_audio: no MPEG frame header after the ID3 tag")
    version = tf.bitwise.right_shift(second, 3) & 3  # 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
    index = tf.bitwise.right_shift(third, 2) & 3
    rates = tf.constant([[11025, 12000, 8000, 0], [0, 0, 0, 0], [22050, 24000, 16000, 0],
                         [44100, 48000, 32000, 0]], tf.int32)
    return rates[version, index]


def _flac_rate(data):
    """The sample rate in a FLAC's STREAMINFO (its first metadata block): 20 bits at byte 18."""
    return _byte(data, 18) * 4096 + _byte(data, 19) * 16 + _byte(data, 20) // 16


def _vorbis_rate(data):
    """The sample rate in an Ogg Vorbis identification header (the first page's packet)."""
    tf = _tf()
    packet = 27 + _byte(data, 26)
    return tf.io.decode_raw(tf.strings.substr(data, packet + 12, 4), tf.int32)[0]


class DecodeAudio(Form):
    """MP3 (tensorflow-io's decoder, as the paper decoded), FLAC and Vorbis (tensorflow-io) and
    WAV (TensorFlow's) to mono PCM, the rate read from the file's own header in string ops.
    MP3 decoders differ by one int16 level here and there (measured: at most 1 on generated
    Common Voice clips, 0.0002 on average); FLAC and WAV are exact."""

    levels = (1.0, 0.05)
    _FORMATS = ("flac", "wav", "ogg", "mp3")

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.source = params.get("from", "data")
        self.to = params.get("to", "audio")
        if str(params.get("format", "auto")) in ("flac", "wav"):
            self.levels = (0.0, 0.0)

    def _decode(self, kind, data):
        import tensorflow_io as tfio

        tf = _tf()
        if kind == "flac":
            pcm = tf.cast(tfio.audio.decode_flac(data, dtype=tf.int16), tf.float32) / 32768.0
            return pcm, _flac_rate(data)
        if kind == "wav":
            pcm, rate = tf.audio.decode_wav(data)
            return pcm, tf.cast(rate, tf.int32)
        if kind == "ogg":
            return tfio.audio.decode_vorbis(data), _vorbis_rate(data)
        return tfio.audio.decode_mp3(data), _mp3_rate(data)

    def __call__(self, f, context):
        tf = _tf()
        data = f.pop(self.source)
        kind = str(self.params.get("format", "auto"))
        if kind == "auto":
            magic = tf.strings.substr(data, 0, 4)
            index = tf.where(tf.equal(magic, b"fLaC"), 0,
                             tf.where(tf.equal(magic, b"RIFF"), 1,
                                      tf.where(tf.equal(magic, b"OggS"), 2, 3)))
            pcm, rate = tf.switch_case(index, [
                (lambda k=k: self._decode(k, data)) for k in self._FORMATS])
        else:
            pcm, rate = self._decode(kind, data)
        pcm = tf.ensure_shape(pcm, [None, None])
        channels = tf.shape(pcm)[1]
        # Mixed down as natively: the channels' sum times 1 / channels, in float32.
        pcm = tf.reduce_sum(pcm, axis=1) * (1.0 / tf.cast(channels, tf.float32))
        seconds = tf.cast(tf.size(pcm), tf.float64) / tf.cast(tf.maximum(rate, 1), tf.float64)
        tf.debugging.assert_less_equal(
            seconds, tf.constant(float(self.params.get("max_seconds", 10800.0)), tf.float64),
            message=f"decode_audio: longer than max_seconds ({self.params.get('max_seconds')})")
        if str(self.params.get("dtype", "int16")) == "int16":
            pcm = tf.cast(tf.clip_by_value(tf.math.round(pcm * 32768.0), -32768.0, 32767.0),
                          tf.int16)
        f[self.to] = pcm
        f["sample_rate"] = rate


def _window(kind, length):
    tf = _tf()
    if kind == "hann":
        return tf.signal.hann_window(length, periodic=True)
    if kind == "hann_symmetric":
        return tf.signal.hann_window(length, periodic=False)
    return tf.ones([length], tf.float32)


class Stft(Form):
    """`tf.signal.stft` (no padding at the end), centred by `tf.pad` where asked; (real,
    imaginary) pairs in a last dimension of 2, as natively. Its gain is the window's sum (what
    one level of int16 PCM, 1 / 32768 here, can move a bin by): learnt on the first sample,
    whose PCM says int16 or float32."""

    learns = True

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.source = params.get("from", "audio")
        self.to = params.get("to", "spectrogram")
        self.frame = int(params["frame_length"])
        fft = params.get("fft_size")
        self.fft = int(fft) if fft else 1 << (self.frame - 1).bit_length()
        self.kind = str(params.get("window", "hann"))
        self.window_sum = float(_window(self.kind, self.frame).numpy().sum())
        self.gain = self.window_sum

    def __call__(self, f, context):
        tf = _tf()
        pcm = f.pop(self.source)
        if pcm.dtype == tf.int16:
            if tf.executing_eagerly():
                self.gain = self.window_sum / 32768.0
            signal = tf.cast(pcm, tf.float32) / 32768.0
        else:
            signal = pcm
        center = str(self.params.get("center", "none"))
        if center != "none":
            pad = self.frame // 2
            signal = tf.pad(signal, [[pad, pad]], mode="CONSTANT" if center == "zeros"
                            else "REFLECT")
        spectrum = tf.signal.stft(signal, self.frame, int(self.params["hop"]), self.fft,
                                  window_fn=lambda n, dtype: _window(self.kind, n),
                                  pad_end=False)
        f[self.to] = tf.stack([tf.math.real(spectrum), tf.math.imag(spectrum)], axis=-1)


class Magnitude(Form):
    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.source = self.to = params.get("field", "spectrogram")

    def __call__(self, f, context):
        tf = _tf()
        pairs = f[self.source]
        f[self.to] = tf.sqrt(pairs[..., 0] * pairs[..., 0] + pairs[..., 1] * pairs[..., 1])


class Mel(Form):
    """`tf.signal.linear_to_mel_weight_matrix` (tf's default edges 125 and 3800 Hz) applied by
    a matrix product. Its gain is the largest sum of one band's weights."""

    learns = True

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.source = self.to = params.get("field", "spectrogram")
        self.bins = None

    def _matrix(self, bins):
        tf = _tf()
        return tf.signal.linear_to_mel_weight_matrix(
            int(self.params.get("bins", 80)), bins, int(self.params["sample_rate"]),
            float(self.params.get("lower_hz") or 125.0),
            float(self.params.get("upper_hz") or 3800.0))

    def __call__(self, f, context):
        tf = _tf()
        spectrogram = f[self.source]
        if "sample_rate" in f:
            tf.debugging.assert_equal(
                f["sample_rate"], int(self.params["sample_rate"]),
                message=f"mel: the audio's rate is not mel's sample_rate "
                        f"({self.params['sample_rate']} Hz)")
        if tf.executing_eagerly():
            # The first sample: the spectrogram's bins (a store's records do not say them
            # before the map runs) and the gain.
            self.bins = int(spectrogram.shape[-1])
            self.gain = float(tf.reduce_max(tf.reduce_sum(self._matrix(self.bins), axis=0)))
        bins = spectrogram.shape[-1] or self.bins
        spectrogram = tf.ensure_shape(spectrogram, [None, bins])
        f[self.to] = tf.matmul(spectrogram, self._matrix(bins))


class Log(Form):
    """log(x + offset). Compared with native processing as exp(value) (`_forms.exp_fields`):
    the bounds carried through the linear steps before it hold there, not on the log."""

    compared_as_exp = True

    def __init__(self, params, step_index):
        super().__init__(params, step_index)
        self.source = self.to = params.get("field", "spectrogram")

    def __call__(self, f, context):
        tf = _tf()
        f[self.to] = tf.math.log(f[self.source] + float(self.params.get("offset", 1e-8)))
