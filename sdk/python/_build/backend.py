"""A minimal PEP 517 / PEP 660 build backend for the agentv-eval package.

It exists so `pip install ./sdk/python` works offline and in a bare venv: it uses only the
standard library and builds the one package directory `agentv_eval/` into a pure-Python wheel.
Metadata mirrors the [project] table of pyproject.toml (the conformance suite checks they agree).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "agentv-eval"
DIST = "agentv_eval"
PACKAGE = "agentv_eval"
SUMMARY = "Write agentv code judges in Python: payload, result, target proxy client, persistent mode"
REQUIRES_PYTHON = ">=3.9"


def _version() -> str:
    with open(os.path.join(ROOT, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        match = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not match:
        raise RuntimeError(f"no __version__ in {PACKAGE}/__init__.py")
    return match.group(1)


def _metadata() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {_version()}\n"
        f"Summary: {SUMMARY}\n"
        "License: MIT\n"
        f"Requires-Python: {REQUIRES_PYTHON}\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme
    )


def _package_files() -> List[Tuple[str, bytes]]:
    files = []
    package_dir = os.path.join(ROOT, PACKAGE)
    for name in sorted(os.listdir(package_dir)):
        if name.endswith(".py") or name == "py.typed":
            with open(os.path.join(package_dir, name), "rb") as f:
                files.append((f"{PACKAGE}/{name}", f.read()))
    return files


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    version = _version()
    info = f"{DIST}-{version}.dist-info"
    wheel_meta = "Wheel-Version: 1.0\nGenerator: agentv-eval _build/backend.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = files + [
        (f"{info}/METADATA", _metadata().encode()),
        (f"{info}/WHEEL", wheel_meta.encode()),
    ]
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in entries)
    record += f"{info}/RECORD,,\n"
    filename = f"{DIST}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in entries + [(f"{info}/RECORD", record.encode())]:
            wheel.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return filename


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []


def build_wheel(
    wheel_directory: str, config_settings: Optional[Dict[str, str]] = None, metadata_directory: Optional[str] = None
) -> str:
    return _write_wheel(wheel_directory, _package_files())


def build_editable(
    wheel_directory: str, config_settings: Optional[Dict[str, str]] = None, metadata_directory: Optional[str] = None
) -> str:
    return _write_wheel(wheel_directory, [(f"{DIST}.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, str]] = None) -> str:
    base = f"{DIST}-{_version()}"
    filename = f"{base}.tar.gz"
    members = [("PKG-INFO", _metadata().encode())]
    for path in ("pyproject.toml", "README.md", "_build/backend.py"):
        with open(os.path.join(ROOT, path), "rb") as f:
            members.append((path, f.read()))
    members += _package_files()
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for path, data in members:
            info = tarfile.TarInfo(f"{base}/{path}")
            info.size = len(data)
            info.mtime = 1577836800
            tar.addfile(info, io.BytesIO(data))
    return filename
