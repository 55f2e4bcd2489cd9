"""The NLP pipeline's article extraction in Python, as the paper's pipeline ran it: a maintained
article-extraction library from PyPI (trafilatura) on each page's HTML."""
import trafilatura


def extract(page):
    text = trafilatura.extract(page.decode("utf-8", "replace"), include_comments=False)
    return text or ""
