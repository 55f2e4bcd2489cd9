"""Decode and resize with Pillow, normalize and crop with NumPy."""
import io
import random

import numpy as np
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def decode(data):
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"))


def resize(image, size=256):
    height, width = image.shape[:2]
    scale = size / min(height, width)
    shape = (max(size, round(width * scale)), max(size, round(height * scale)))
    return np.asarray(Image.fromarray(image).resize(shape, Image.BILINEAR))


def normalize(image):
    return (image.astype(np.float32) / 255.0 - MEAN) / STD


def random_crop(image, size=224):
    top = random.randint(0, image.shape[0] - size)
    left = random.randint(0, image.shape[1] - size)
    return np.ascontiguousarray(image[top:top + size, left:left + size])
