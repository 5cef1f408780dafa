# SPDX-License-Identifier: GPL-3.0-or-later
"""Read a glTF 2.0 file (.gltf with external or ``data:`` buffers, or .glb) and its accessors.

Independent of Blender's importer, which changes the data (clamps weights, merges
influence sets, re-binds the mesh): this module returns what the file stores.
Section numbers refer to the glTF 2.0 specification (KHR, 2021).
"""

from __future__ import annotations

import base64
import json
import os
import stat
import struct
import urllib.parse
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError

# 3.6.2.2: component types and their little-endian numpy dtypes.
COMPONENT_DTYPES: dict[int, str] = {
    5120: "<i1",  # BYTE
    5121: "<u1",  # UNSIGNED_BYTE
    5122: "<i2",  # SHORT
    5123: "<u2",  # UNSIGNED_SHORT
    5125: "<u4",  # UNSIGNED_INT
    5126: "<f4",  # FLOAT
}
# 3.6.2.2: element types and their component count.
TYPE_COMPONENTS: dict[str, int] = {
    "SCALAR": 1,
    "VEC2": 2,
    "VEC3": 3,
    "VEC4": 4,
    "MAT2": 4,
    "MAT3": 9,
    "MAT4": 16,
}
# 3.11 "Animation" / accessor normalisation: c / (2^(b-1) - 1) clamped at -1 for signed,
# c / (2^b - 1) for unsigned.
NORMALISATION_SCALE: dict[int, float] = {5120: 127.0, 5121: 255.0, 5122: 32767.0, 5123: 65535.0}

#: Geometry compression the reader does not decode (it would read the fallback-less buffers as garbage).
_COMPRESSION_EXTENSIONS = {"KHR_draco_mesh_compression", "EXT_meshopt_compression", "KHR_meshopt_compression"}
_GLB_MAGIC = 0x46546C67  # "glTF"
_CHUNK_JSON = 0x4E4F534A
_CHUNK_BIN = 0x004E4942


class GltfError(InputError):
    """A glTF file cannot be read as the specification says (names file, object index, problem)."""

    code = "bad-gltf"


class GltfCompressedError(GltfError):
    """The file requires mesh compression this reader does not decode (``extensions`` names it)."""

    def __init__(self, message: str, extensions: tuple[str, ...]) -> None:
        super().__init__(message)
        self.extensions = extensions


#: Why a buffer or image uri is flagged: it names a file outside the asset's folder.
#: ``NON_RELATIVE_URI`` is the Khronos glTF-Validator's code (a scheme or an absolute path);
#: a relative path that climbs out with ``..`` has none (the validator resolves it as given).
NON_RELATIVE_URI = "NON_RELATIVE_URI"


@dataclass(frozen=True)
class UriProblem:
    """A buffer or image uri that leaves the asset's folder (``kind`` 'buffers' or 'images')."""

    kind: str
    index: int
    uri: str
    validator_code: str | None


class LazyBuffers:
    """The file's buffers, each read on first use only (an unused buffer is never opened).

    ``buffers[i]`` is the bytes of buffer ``i``, cut to its ``byteLength``; ``len(buffers)``
    the number the JSON declares.  A buffer file is read only when it is a regular file, and
    never more than its declared ``byteLength``.
    """

    def __init__(self, path: Path, doc_json: dict[str, Any], glb_bin: bytes | None) -> None:
        declared = doc_json.get("buffers", [])
        if not isinstance(declared, list):
            raise GltfError(f"{path.name}: buffers must be a JSON array, found {type(declared).__name__}")
        self._path = path
        self._declared: list[Any] = declared
        self._glb_bin = glb_bin
        self._loaded: dict[int, bytes] = {}

    def __len__(self) -> int:
        return len(self._declared)

    def __getitem__(self, index: int) -> bytes:
        if index not in self._loaded:
            self._loaded[index] = _load_buffer(self._path, index, self._declared[index], self._glb_bin)
        return self._loaded[index]

    @property
    def loaded(self) -> tuple[int, ...]:
        """Indices of the buffers read so far."""
        return tuple(sorted(self._loaded))


@dataclass(frozen=True)
class GltfDocument:
    """A parsed glTF asset: its JSON and the bytes of each buffer (read when first used)."""

    path: Path
    json: dict[str, Any]
    buffers: LazyBuffers
    #: Buffer and image uris that leave the asset's folder (reported, see ``uri_problems``).
    outside_uris: tuple[UriProblem, ...] = ()

    def fail(self, where: str, problem: str) -> GltfError:
        """An error naming this file, the object (``accessor 3``) and the problem."""
        return GltfError(f"{self.path.name}: {where}: {problem}")

    def items(self, kind: str) -> list[dict[str, Any]]:
        """The top-level array ``kind`` (``nodes``, ``accessors``...), empty when absent."""
        value = self.json.get(kind, [])
        if not isinstance(value, list):
            raise self.fail(kind, f"must be a JSON array, found {type(value).__name__}")
        return value

    def item(self, kind: str, index: Any, referrer: str) -> dict[str, Any]:
        """``json[kind][index]`` with a bounds check that names who referred to it."""
        seq = self.items(kind)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(seq):
            raise self.fail(referrer, f"refers to {kind} {index!r}, but the file has {len(seq)}")
        entry = seq[index]
        if not isinstance(entry, dict):
            raise self.fail(f"{kind} {index}", "is not a JSON object")
        return entry


def load_gltf(path: str | Path) -> GltfDocument:
    """Read a .gltf or .glb file; its buffers are read when an accessor first needs them.

    Parameters
    ----------
    path : str or Path
        A .gltf (JSON; buffers external or ``data:`` URIs) or .glb (binary container, 4.4).

    Returns
    -------
    GltfDocument

    Raises
    ------
    GltfError
        Not a regular file, bad magic or version, truncated container, invalid JSON.  A used
        buffer that is missing, truncated or not a regular file raises when it is read.
    """
    p = Path(path)
    raw = _read_regular(p, None, f"{p}", "check the path")
    glb_bin: bytes | None = None
    if raw[:4] == b"glTF":
        doc_json, glb_bin = _parse_glb(p, raw)
    else:
        if p.suffix.lower() in (".glb", ".vrm"):  # a VRM file is a glTF binary
            raise GltfError(f"{p.name}: bad magic {raw[:4]!r}; a {p.suffix.lower()} must start with b'glTF' (4.4.3)")
        doc_json = _parse_json(p, raw, "the file")
    asset = doc_json.get("asset", {})
    version = str(asset.get("version", "") if isinstance(asset, dict) else "")
    if not version.startswith("2."):
        raise GltfError(f"{p.name}: asset.version is {version!r}; only glTF 2.x is read")
    required = doc_json.get("extensionsRequired", [])
    compressed = sorted(set(required if isinstance(required, list) else []) & _COMPRESSION_EXTENSIONS)
    if compressed:
        raise GltfCompressedError(
            f"{p.name}: requires {', '.join(compressed)}, which this reader does not decode; "
            "export without mesh compression to audit the file",
            tuple(compressed),
        )
    return GltfDocument(path=p, json=doc_json, buffers=LazyBuffers(p, doc_json, glb_bin),
                        outside_uris=uri_problems(doc_json))


def _read_regular(target: Path, limit: int | None, label: str, advice: str) -> bytes:
    """At most ``limit`` bytes of ``target`` (all when None), refusing anything but a regular file.

    The file is opened without blocking (a FIFO would wait for a writer for ever) and checked
    with ``fstat`` before a byte is read (a device such as /dev/zero never ends).
    """
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise GltfError(f"{label}: cannot read {str(target)!r} ({exc.strerror}); {advice}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise GltfError(f"{label}: {str(target)!r} is not a regular file ({_file_kind(mode)}); "
                            "a glTF file and its buffers must be ordinary files")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read() if limit is None else f.read(limit)
    except OSError as exc:
        raise GltfError(f"{label}: cannot read {str(target)!r} ({exc.strerror}); {advice}") from exc
    finally:
        os.close(fd)


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _uri_leaves_folder(uri: str) -> str | None | bool:
    """False when ``uri`` stays in the asset's folder; else the validator's code for it (None: none)."""
    if uri.startswith("data:"):
        return False
    parsed = urllib.parse.urlsplit(uri)
    path = urllib.parse.unquote(parsed.path)
    # A scheme (file:, http:), a network location or an absolute path: the validator's NON_RELATIVE_URI.
    if parsed.scheme or parsed.netloc or path.startswith(("/", "\\")) or PureWindowsPath(path).drive:
        return NON_RELATIVE_URI
    depth = 0
    for part in path.replace("\\", "/").split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return None
        elif part not in ("", "."):
            depth += 1
    return False


def uri_problems(doc_json: dict[str, Any]) -> tuple[UriProblem, ...]:
    """Every buffer and image uri that names a file outside the asset's folder.

    An asset that reaches outside its folder breaks when the folder is moved, published or
    loaded over HTTP, and lets a file make the reader open any path (/dev/zero, a FIFO).
    """
    out = []
    for kind in ("buffers", "images"):
        entries = doc_json.get(kind, [])
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            uri = entry.get("uri") if isinstance(entry, dict) else None
            if isinstance(uri, str):
                code = _uri_leaves_folder(uri)
                if code is not False:
                    out.append(UriProblem(kind, index, uri, code if isinstance(code, str) else None))
    return tuple(out)


def uri_target(doc: GltfDocument, entry: Any) -> Path | None:
    """The file a buffer or image entry's uri names (None for a ``data:`` uri or none at all)."""
    uri = entry.get("uri") if isinstance(entry, dict) else None
    if not isinstance(uri, str) or uri.startswith("data:"):
        return None
    return doc.path.parent / urllib.parse.unquote(uri)


def _parse_json(p: Path, raw: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GltfError(f"{p.name}: {what} is not UTF-8 JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise GltfError(f"{p.name}: {what} must hold a JSON object")
    return value


def _parse_glb(p: Path, raw: bytes) -> tuple[dict[str, Any], bytes | None]:
    # 4.4.3: 12-byte header (magic, version, length), then chunks (length, type, data).
    if len(raw) < 20:
        raise GltfError(f"{p.name}: truncated GLB ({len(raw)} bytes, the header alone needs 20)")
    magic, version, length = struct.unpack_from("<III", raw, 0)
    if magic != _GLB_MAGIC:
        raise GltfError(f"{p.name}: bad GLB magic {raw[:4]!r}")
    if version != 2:
        raise GltfError(f"{p.name}: GLB container version {version}; only version 2 is read")
    if length > len(raw):
        raise GltfError(f"{p.name}: truncated GLB: header says {length} bytes, the file has {len(raw)}")
    chunks: list[tuple[int, bytes]] = []
    offset = 12
    while offset + 8 <= length:
        size, kind = struct.unpack_from("<II", raw, offset)
        start = offset + 8
        if start + size > length:
            raise GltfError(
                f"{p.name}: truncated GLB: chunk {len(chunks)} at byte {offset} claims {size} bytes, "
                f"only {length - start} remain"
            )
        chunks.append((kind, raw[start : start + size]))
        offset = start + size
    if not chunks or chunks[0][0] != _CHUNK_JSON:
        raise GltfError(f"{p.name}: the first GLB chunk must be JSON (4.4.3.1)")
    doc_json = _parse_json(p, chunks[0][1], "the GLB JSON chunk")
    binary = chunks[1][1] if len(chunks) > 1 and chunks[1][0] == _CHUNK_BIN else None
    return doc_json, binary


def _load_buffer(p: Path, i: int, buf: Any, glb_bin: bytes | None) -> bytes:
    """Buffer ``i``'s bytes, cut to its byteLength; read only from a regular file, never past byteLength."""
    where = f"{p.name}: buffer {i}"
    if not isinstance(buf, dict):
        raise GltfError(f"{where}: is not a JSON object")
    length = buf.get("byteLength")
    if not isinstance(length, int) or isinstance(length, bool) or length < 0:
        raise GltfError(f"{where}: byteLength {length!r} is not a non-negative integer")
    uri = buf.get("uri")
    if uri is None:
        # 4.4.3.3: the buffer without uri is the GLB's BIN chunk (only the first buffer may be).
        if i != 0 or glb_bin is None:
            raise GltfError(f"{where}: has no uri and the file has no GLB binary chunk for it")
        data = glb_bin
    elif not isinstance(uri, str):
        raise GltfError(f"{where}: uri {uri!r} is not a string")
    elif uri.startswith("data:"):
        header, _, payload = uri.partition(",")
        if not header.endswith(";base64"):
            raise GltfError(f"{where}: data URI is not base64 ({header[:40]!r})")
        try:
            data = base64.b64decode(payload, validate=True)
        except ValueError as exc:
            raise GltfError(f"{where}: data URI is not valid base64 ({exc})") from exc
    else:
        target = p.parent / urllib.parse.unquote(uri)
        data = _read_regular(target, length, where, "keep it beside the .gltf")
    if len(data) < length:
        raise GltfError(f"{where}: truncated: byteLength is {length} but only {len(data)} bytes are there")
    return data[:length]


def _int_field(doc: GltfDocument, obj: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = obj.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise doc.fail(where, f"{key} {value!r} is not a non-negative integer")
    return value


def _element_layout(component_type: int, kind: str) -> tuple[int, int, int]:
    """(columns, rows, column stride in bytes) of one element; 3.6.2.4 pads matrix columns to 4 bytes."""
    size = np.dtype(COMPONENT_DTYPES[component_type]).itemsize
    if kind.startswith("MAT"):
        n = int(kind[3])
        column = n * size
        return n, n, (column + 3) // 4 * 4
    n = TYPE_COMPONENTS[kind]
    return 1, n, n * size


def view_bytes(doc: GltfDocument, view_index: Any, where: str) -> tuple[bytes, int | None]:
    """The bytes of a buffer view and its byteStride (None when tightly packed)."""
    view = doc.item("bufferViews", view_index, where)
    vwhere = f"bufferView {view_index}"
    buffer_index = view.get("buffer")
    doc.item("buffers", buffer_index, vwhere)
    assert isinstance(buffer_index, int)  # checked by doc.item
    data = doc.buffers[buffer_index]
    start = _int_field(doc, view, "byteOffset", vwhere, 0)
    length = _int_field(doc, view, "byteLength", vwhere)
    if start + length > len(data):
        raise doc.fail(
            vwhere, f"bytes {start}..{start + length} run past the end of buffer {buffer_index} ({len(data)} bytes)"
        )
    stride = view.get("byteStride")
    if stride is not None and (not isinstance(stride, int) or not 4 <= stride <= 252 or stride % 4):
        raise doc.fail(vwhere, f"byteStride {stride!r} must be a multiple of 4 in 4..252 (3.6.2.4)")
    return data[start : start + length], stride


def _strided(
    doc: GltfDocument,
    view_index: Any,
    offset: int,
    count: int,
    component_type: int,
    kind: str,
    where: str,
    allow_stride: bool = True,
) -> NDArray[Any]:
    """``count`` elements read from a buffer view as stored: (count, components) of the file's dtype."""
    data, stride = view_bytes(doc, view_index, where)
    dtype = np.dtype(COMPONENT_DTYPES[component_type])
    cols, rows, column_stride = _element_layout(component_type, kind)
    element = cols * column_stride if cols > 1 else rows * dtype.itemsize
    step = stride if (stride is not None and allow_stride) else element
    if step < element:
        raise doc.fail(where, f"byteStride {step} is smaller than one element ({element} bytes)")
    if count and offset + (count - 1) * step + element > len(data):
        raise doc.fail(
            where,
            f"{count} elements of {element} bytes (stride {step}) from byte {offset} run past the end of "
            f"bufferView {view_index} ({len(data)} bytes)",
        )
    if count == 0:
        return np.zeros((0, cols * rows), dtype=dtype)
    if step == element and (cols == 1 or column_stride == rows * dtype.itemsize):
        # Tightly packed, no column padding: the elements are one run of components (copied out,
        # so the result is aligned and writable whatever the offset).
        packed = np.frombuffer(data, dtype=dtype, count=count * cols * rows, offset=offset)
        return packed.reshape(count, cols * rows).copy()
    buffer = np.frombuffer(data, dtype=np.uint8)
    # Copy each element's bytes out (any alignment, any stride), then view them as the component type.
    idx = offset + np.arange(count)[:, None] * step
    if cols > 1:
        cols_off = (np.arange(cols)[:, None] * column_stride + np.arange(rows * dtype.itemsize)[None, :]).ravel()
    else:
        cols_off = np.arange(rows * dtype.itemsize)
    raw = buffer[idx + cols_off[None, :]]
    return np.ascontiguousarray(raw).view(dtype).reshape(count, cols * rows)


def accessor_info(doc: GltfDocument, index: int, referrer: str = "") -> dict[str, Any]:
    """The accessor's JSON after checking componentType, type and count."""
    where = referrer or "a reference"
    acc = doc.item("accessors", index, where)
    awhere = f"accessor {index}"
    if acc.get("componentType") not in COMPONENT_DTYPES:
        raise doc.fail(awhere, f"componentType {acc.get('componentType')!r} is not one of {sorted(COMPONENT_DTYPES)}")
    if acc.get("type") not in TYPE_COMPONENTS:
        raise doc.fail(awhere, f"type {acc.get('type')!r} is not one of {sorted(TYPE_COMPONENTS)}")
    _int_field(doc, acc, "count", awhere)
    if acc.get("normalized") and acc["componentType"] in (5125, 5126):
        raise doc.fail(awhere, "normalized is true on a FLOAT or UNSIGNED_INT accessor (3.6.2.2)")
    return acc


def read_accessor_stored(doc: GltfDocument, index: int, referrer: str = "") -> NDArray[Any]:
    """An accessor's values exactly as stored (sparse substitution applied, no dequantisation).

    Parameters
    ----------
    doc : GltfDocument
    index : int
        Accessor index.
    referrer : str
        Who asked (``mesh 0 primitive 1 WEIGHTS_0``), for error messages.

    Returns
    -------
    (count, C) array of the accessor's component dtype
        ``C`` components per element (16 for MAT4, column-major as stored).
    """
    acc = accessor_info(doc, index, referrer)
    awhere = f"accessor {index}" + (f" ({referrer})" if referrer else "")
    ctype: int = acc["componentType"]
    kind: str = acc["type"]
    count: int = acc["count"]
    ncomp = TYPE_COMPONENTS[kind]
    if "bufferView" in acc:
        values = _strided(
            doc, acc["bufferView"], _int_field(doc, acc, "byteOffset", awhere, 0), count, ctype, kind, awhere
        )
    else:
        # 3.6.2.3: without a bufferView the accessor is zeros (sparse may then fill it).
        values = np.zeros((count, ncomp), dtype=COMPONENT_DTYPES[ctype])
    sparse = acc.get("sparse")
    if sparse is not None:
        values = values.copy()
        swhere = f"{awhere} sparse"
        if not isinstance(sparse, dict):
            raise doc.fail(swhere, f"must be a JSON object, found {type(sparse).__name__}")
        n = _int_field(doc, sparse, "count", swhere)
        ind = sparse.get("indices", {})
        val = sparse.get("values", {})
        for part, entry in (("indices", ind), ("values", val)):
            if not isinstance(entry, dict):
                raise doc.fail(f"{swhere} {part}", f"must be a JSON object, found {type(entry).__name__}")
        if ind.get("componentType") not in (5121, 5123, 5125):
            raise doc.fail(swhere, f"indices componentType {ind.get('componentType')!r} must be 5121, 5123 or 5125")
        # Sparse indices and values are tightly packed (3.6.2.3): no byteStride.
        where_i = _strided(
            doc,
            ind.get("bufferView"),
            _int_field(doc, ind, "byteOffset", swhere, 0),
            n,
            ind["componentType"],
            "SCALAR",
            swhere + " indices",
            allow_stride=False,
        )[:, 0].astype(np.int64)
        subst = _strided(
            doc,
            val.get("bufferView"),
            _int_field(doc, val, "byteOffset", swhere, 0),
            n,
            ctype,
            kind,
            swhere + " values",
            allow_stride=False,
        )
        if n and (where_i.min() < 0 or where_i.max() >= count):
            raise doc.fail(swhere, f"index {int(where_i.max())} is outside the accessor's {count} elements")
        if n > 1 and np.any(np.diff(where_i) <= 0):
            raise doc.fail(swhere, "indices must strictly increase (3.6.2.3)")
        values[where_i] = subst
    return values


def dequantise(values: NDArray[Any], component_type: int, normalized: bool) -> NDArray[np.float64]:
    """Stored values as float64, normalised integers mapped per 3.11 (``max(c / 127, -1)`` etc.).

    Parameters
    ----------
    values : (N, C) any integer or float dtype
    component_type : int
    normalized : bool

    Returns
    -------
    (N, C) float64
    """
    out = values.astype(np.float64)
    if normalized and component_type in NORMALISATION_SCALE:
        out = out / NORMALISATION_SCALE[component_type]
        if component_type in (5120, 5122):
            out = np.maximum(out, -1.0)
    return out


def read_accessor(doc: GltfDocument, index: int, referrer: str = "") -> NDArray[np.float64]:
    """An accessor's values as float64 (normalised integers dequantised, sparse applied).

    Returns
    -------
    (count, C) float64
    """
    acc = accessor_info(doc, index, referrer)
    return dequantise(read_accessor_stored(doc, index, referrer), acc["componentType"], bool(acc.get("normalized")))


def as_matrices(flat: NDArray[np.float64]) -> NDArray[np.float64]:
    """Column-major MAT4 elements ``(N, 16)`` as row-major ``(N, 4, 4)`` matrices (M[i, j], row i)."""
    mats: NDArray[np.float64] = flat.reshape(-1, 4, 4).transpose(0, 2, 1).copy()
    return mats
