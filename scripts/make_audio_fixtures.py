#!/usr/bin/env python3
"""Reference outputs for the audio steps' fidelity tests (workloads/tests/audio_reference.rs).

Installs TensorFlow (tensorflow-cpu 2.16, whose tf.signal the paper's pipelines used), librosa
and soundfile (libsndfile with libFLAC, mpg123/LAME and libvorbis) in scripts/.venv-audio, then:

1. synthesizes three short speech-like clips with NumPy (a gliding harmonic voice, a noise
   burst, a noise floor; fixed seed) and encodes them with libsndfile: MP3 at 48 kHz mono,
   FLAC at 16 kHz mono, Ogg Vorbis at 44.1 kHz stereo;
2. decodes each file back with libsndfile (an independent decoder): FLAC as int16, MP3 and
   Vorbis as float32;
3. runs the paper's spectrogram chain with tf.signal on the int16 PCM read as x / 32768:
   stft (MP3: frame 960, hop 480, FFT 1024; FLAC: frame 320, hop 160, FFT 1024), abs, the
   linear_to_mel_weight_matrix (80 bins, default edges 20-4000 Hz), log(x + 1e-8);
4. writes the tf mel matrices in float64 (rows above the last non-zero one are checked to be
   zero and left out), librosa's Slaney mel matrix (its default float32), and librosa's
   centred STFT magnitude (reflection padding) for the centring option.

All arrays are .npy. Running it again writes identical PCM-derived files for the same library
versions (recorded in README.md).

    python3 scripts/make_audio_fixtures.py
"""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "workloads", "tests", "fixtures", "audio")
PACKAGES = ["tensorflow-cpu==2.16.*", "numpy<2", "soundfile", "librosa"]


def in_venv():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _venv import enter

    enter(".venv-audio", PACKAGES, __file__)


def voice(np, rng, rate, seconds, f0_start, f0_end):
    """A speech-like clip: harmonics of a gliding pitch under a syllable envelope, a fricative
    noise burst, and a noise floor (so no band of the log-mel is exactly silent)."""
    n = int(rate * seconds)
    t = np.arange(n) / rate
    f0 = np.linspace(f0_start, f0_end, n)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    harmonics = sum(np.sin(k * phase) / k for k in range(1, 40) if k * f0_end < rate / 2 * 0.9)
    envelope = np.clip(np.sin(np.pi * np.clip((t - 0.05) / (seconds * 0.6), 0, 1)), 0, None) ** 1.5
    burst = rng.standard_normal(n) * np.exp(-((t - seconds * 0.8) / (seconds * 0.05)) ** 2)
    floor = rng.standard_normal(n) * 10 ** (-55 / 20)
    clip = 0.25 * harmonics * envelope + 0.08 * burst + floor
    return (clip / np.max(np.abs(clip)) * 0.7).astype(np.float32)


def main():
    in_venv()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import librosa
    import numpy as np
    import soundfile as sf
    import tensorflow as tf

    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20221)

    def save(name, array):
        np.save(os.path.join(OUT, name), array)

    def to_int16(x):
        return np.clip(np.round(x * 32768.0), -32768, 32767).astype(np.int16)

    # 1-2. Encode with libsndfile, decode with libsndfile.
    mp3 = os.path.join(OUT, "clip48k.mp3")
    sf.write(mp3, voice(np, rng, 48_000, 0.5, 140, 110), 48_000, format="MP3", subtype="MPEG_LAYER_III")
    mp3_pcm, rate = sf.read(mp3, dtype="float32")
    assert rate == 48_000
    save("clip48k.mp3.f32.npy", mp3_pcm)

    flac = os.path.join(OUT, "clip16k.flac")
    sf.write(flac, to_int16(voice(np, rng, 16_000, 0.6, 110, 150)), 16_000, format="FLAC", subtype="PCM_16")
    flac_pcm, rate = sf.read(flac, dtype="int16")
    assert rate == 16_000
    save("clip16k.flac.i16.npy", flac_pcm)

    ogg = os.path.join(OUT, "clip44k-stereo.ogg")
    left, right = voice(np, rng, 44_100, 0.3, 200, 180), voice(np, rng, 44_100, 0.3, 120, 130)
    sf.write(ogg, np.stack([left, right], axis=1), 44_100, format="OGG", subtype="VORBIS")
    ogg_pcm, rate = sf.read(ogg, dtype="float32")
    assert rate == 44_100 and ogg_pcm.shape[1] == 2
    save("clip44k-stereo.ogg.f32.npy", ogg_pcm)

    # 3. The paper's chain in tf.signal on int16 PCM.
    chains = [
        ("clip48k", to_int16(mp3_pcm), 48_000, 960, 480),
        ("clip16k", flac_pcm, 16_000, 320, 160),
    ]
    # The FLAC chain's input is clip16k.flac.i16.npy itself.
    save("clip48k.pcm.i16.npy", chains[0][1])
    for name, pcm, rate, frame, hop in chains:
        x = tf.cast(pcm, tf.float32) / 32768.0
        magnitude = tf.abs(tf.signal.stft(x, frame_length=frame, frame_step=hop, fft_length=1024))
        matrix = tf.signal.linear_to_mel_weight_matrix(80, 513, rate)
        mel = tf.tensordot(magnitude, matrix, 1)
        save(f"{name}.tf.magnitude.npy", magnitude.numpy())
        save(f"{name}.tf.logmel.npy", tf.math.log(mel + 1e-8).numpy())
        # 4. The matrix in float64, zero rows at the top end cut.
        exact = tf.signal.linear_to_mel_weight_matrix(80, 513, rate, dtype=tf.float64).numpy()
        rows = int(np.max(np.nonzero(exact.any(axis=1)))) + 1
        assert not exact[rows:].any()
        save(f"mel.tf.{rate}.f64.npy", exact[:rows])

    save("mel.slaney.16000.npy", librosa.filters.mel(sr=16_000, n_fft=1024, n_mels=80))
    head = flac_pcm[:8000].astype(np.float32) / 32768.0
    centred = librosa.stft(head, n_fft=1024, hop_length=160, win_length=320, window="hann", center=True, pad_mode="reflect")
    save("clip16k.librosa.reflect.magnitude.npy", np.ascontiguousarray(np.abs(centred), dtype=np.float32))

    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write(
            "Reference outputs for the audio steps, written by scripts/make_audio_fixtures.py with "
            f"TensorFlow {tf.__version__}, librosa {librosa.__version__}, soundfile {sf.__version__} "
            f"(libsndfile {sf.__libsndfile_version__}), NumPy {np.__version__}.\n"
        )
    print("wrote fixtures to", OUT)


if __name__ == "__main__":
    main()
