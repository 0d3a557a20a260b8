"""The build backend of the carma Python module (PEP 517, PEP 660): standard library only, so
that `pip install ./python` works offline with build isolation (pyproject.toml requires
nothing). The package's metadata is here; its version is carma/__init__.py's __version__."""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

NAME = "carma"
HERE = os.path.dirname(os.path.abspath(__file__))
TAG = "py3-none-any"
# zip and tar times: SOURCE_DATE_EPOCH when set (reproducible builds), else 2020-01-01
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "1577836800"))


def _version():
    with open(os.path.join(HERE, NAME, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("no __version__ in carma/__init__.py")
    return m.group(1)


def _metadata():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\n"
            "Name: %s\n"
            "Version: %s\n"
            "Summary: Marks for carma: the energy of a program's windows\n"
            "License: MIT\n"
            "Requires-Python: >=3.8\n"
            "Description-Content-Type: text/markdown\n"
            "\n%s" % (NAME, _version(), readme))


def _sources():
    """The package's files, relative to HERE, sorted."""
    out = []
    for root, dirs, files in os.walk(os.path.join(HERE, NAME)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        out += [os.path.relpath(os.path.join(root, f), HERE) for f in sorted(files)
                if f.endswith(".py") or f == "py.typed"]
    return out


def _dist_info():
    return "%s-%s.dist-info" % (NAME, _version())


def _dist_info_files():
    wheel = ("Wheel-Version: 1.0\nGenerator: carma_build\nRoot-Is-Purelib: true\n"
             "Tag: %s\n" % TAG)
    return {"METADATA": _metadata(), "WHEEL": wheel}


def _write_wheel(wheel_directory, files):
    """files: [(archive name, bytes)]; adds the dist-info and RECORD, returns the file name."""
    di = _dist_info()
    files = list(files) + [(di + "/" + k, v.encode("utf-8"))
                           for k, v in _dist_info_files().items()]
    record = io.StringIO()
    for arc, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.write("%s,sha256=%s,%d\n" % (arc, digest.decode(), len(data)))
    record.write("%s/RECORD,,\n" % di)
    files.append((di + "/RECORD", record.getvalue().encode("utf-8")))
    name = "%s-%s-%s.whl" % (NAME, _version(), TAG)
    stamp = time.gmtime(max(EPOCH, 315532800))[:6]
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            info = zipfile.ZipInfo(arc, stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def _read(rel):
    with open(os.path.join(HERE, rel), "rb") as f:
        return f.read()


# ---- the hooks ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    for k, v in _dist_info_files().items():
        with open(os.path.join(d, k), "w", encoding="utf-8") as f:
            f.write(v)
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory,
                        [(rel.replace(os.sep, "/"), _read(rel)) for rel in _sources()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # a .pth line puts this folder on sys.path: the installed module is the working copy
    pth = (HERE + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, [("_carma_editable.pth", pth)])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    files = ["pyproject.toml", "carma_build.py", "README.md"] + _sources()
    os.makedirs(sdist_directory, exist_ok=True)
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        entries = [(base + "/PKG-INFO", _metadata().encode("utf-8"))]
        entries += [(base + "/" + rel.replace(os.sep, "/"), _read(rel)) for rel in files]
        for arc, data in entries:
            info = tarfile.TarInfo(arc)
            info.size, info.mtime, info.mode = len(data), EPOCH, 0o644
            t.addfile(info, io.BytesIO(data))
    return name
