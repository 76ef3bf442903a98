"""``python -m aotirt inspect MODEL``: what a model library or package needs
and holds, without opening the library (no model code runs).

Read: the library's ELF symbol table (the ``aoti_torch_*`` functions it
leaves to the process, each checked against aotirt's shim table; and from
those, the optional libraries it will load), the package's metadata (its
device), its weights blob's size, and, when the package keeps torch's
generated wrapper source (``*.wrapper.cpp``, which torch packages unless
told not to), the inputs, outputs and constants that source records:
names, dtypes, shapes, dynamic dimensions and their bounds. Without that
source, what only the opened library can say is reported as not recorded.
"""

import os
import re

# The optional library a shim family needs, per device (design.md).
_OPTIONAL = {("matmul", "cuda"): "cuBLAS", ("convolution", "cuda"): "cuDNN",
             ("attention", "cuda"): "cuDNN (float16/bfloat16) or cuBLAS (float32)"}
_DTYPES = {"Float": "float32", "Half": "float16", "BFloat16": "bfloat16", "Double": "float64", "Long": "int64",
           "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool"}


def inspect(path, model=None):
    """A dict describing `path` (a .so or .pt2); see the module's docstring."""
    from aotirt._library import library_undefined_symbols, shim_table
    from aotirt.loader import default_device, locate

    library, blob, package_device = locate(path, model)
    implemented = {name: (family, devices) for name, family, devices in shim_table()}
    needed = library_undefined_symbols(library, "aoti_torch_")
    shims = [{"name": n, "implemented": n in implemented} for n in needed]
    device = default_device(library, package_device)
    optional = set()
    for n in needed:
        family = implemented.get(n, ("", ""))[0]
        kind = "cuda" if n.startswith("aoti_torch_cuda_") else "cpu" if n.startswith("aoti_torch_cpu_") else device
        if (family, kind) in _OPTIONAL:
            optional.add(_OPTIONAL[(family, kind)])
    report = {
        "path": os.fspath(path), "library": library, "device": device,
        "device_recorded": package_device is not None,
        "shims": shims, "missing_shims": [s["name"] for s in shims if not s["implemented"]],
        "optional_libraries": sorted(optional),
        "weights_blob_bytes": os.path.getsize(blob) if blob else None,
        "inputs": None, "outputs": None, "constants": None, "source": None,
    }
    source = _wrapper_source(library)
    if source is not None:
        report["source"] = source[0]
        report.update(_from_source(source[1]))
    return report


def _wrapper_source(library):
    """(path, text) of torch's generated wrapper source beside `library`."""
    stem = library[: -len(".so")] if library.endswith(".so") else library
    candidate = stem + ".cpp"
    if os.path.isfile(candidate):
        with open(candidate, encoding="utf-8", errors="replace") as f:
            return candidate, f.read()
    return None


def _info_blocks(text, what):
    """{index: {field: raw value}} from lines like `inputs_info_[0].name = "x";`."""
    blocks = {}
    for index, field, value in re.findall(rf"{what}_info_\[(\d+)\]\.(\w+) = (.*?);\n", text):
        blocks.setdefault(int(index), {})[field] = value.strip()
    return [blocks[i] for i in sorted(blocks)]


def _string(raw):
    return raw[1:-1] if raw and raw.startswith('"') and raw.endswith('"') else raw


def _ints(raw):
    return [int(v) for v in re.findall(r"-?\d+", raw or "")]


def _dtype(raw):
    """A dtype name from the source's spellings: cached_torch_dtype_float32,
    aoti_torch_dtype_float32(), "torch.float32", at::kFloat."""
    raw = raw or ""
    found = re.search(r"dtype_([a-z0-9]+)", raw) or re.search(r"torch\.([a-z0-9]+)", raw)
    if found:
        return found.group(1)
    found = re.search(r"k([A-Z]\w+)", raw)
    return _DTYPES.get(found.group(1), found.group(1)) if found else None


def _from_source(text):
    inputs = [{"name": _string(b.get("name")), "dtype": _dtype(b.get("dtype"))} for b in _info_blocks(text, "inputs")]
    outputs = [{"name": _string(b.get("name")), "dtype": _dtype(b.get("dtype"))}
               for b in _info_blocks(text, "outputs")]
    _input_checks(text, inputs)
    constants = []
    for b in _info_blocks(text, "constants"):
        constants.append({
            "name": _string(b.get("name")), "fqn": _string(b.get("original_fqn")),
            "dtype": _dtype(b.get("dtype")), "shape": _ints(b.get("shape")) if "shape" in b else None,
            "nbytes": int(b["data_size"]) if b.get("data_size", "").isdigit() else None,
            "folded": b.get("from_folded") == "true",
        })
    return {"inputs": inputs, "outputs": outputs, "constants": constants}


def _input_checks(text, inputs):
    """Static sizes and the bounds of dynamic ones, from the generated input
    checks (__check_inputs_outputs), where the source has them: each size is
    an int, or {"min": ..., "max": ...} for a dynamic one."""
    for i, entry in enumerate(inputs):
        dtype = re.search(rf"int32_t {re.escape(entry['name'] or '?')}_expected_dtype = aoti_torch_dtype_(\w+)\(\)",
                          text)
        if dtype and not entry.get("dtype"):
            entry["dtype"] = dtype.group(1)
        prefix = rf'"input_handles\[{i}\]: '
        sizes = {}
        for dim, value in re.findall(prefix + r'unmatched dim value at (\d+), "\s*<< "expected: (\d+),', text):
            sizes[int(dim)] = int(value)
        for dim, low in re.findall(prefix + r'dim value is too small at (\d+), "\s*<< "expected it to be >= (\d+),',
                                   text):
            sizes.setdefault(int(dim), {"min": None, "max": None})["min"] = int(low)
        for dim, high in re.findall(prefix + r'dim value is too large at (\d+), "\s*<< "expected to be <= (\d+),',
                                    text):
            sizes.setdefault(int(dim), {"min": None, "max": None})["max"] = int(high)
        if sizes:
            entry["shape"] = [sizes.get(d) for d in range(max(sizes) + 1)]


def format_text(report, largest=5):
    """The report as lines a person reads."""
    lines = [f"model: {report['path']}", f"library: {report['library']}",
             f"device: {report['device']}" + ("" if report["device_recorded"] else " (not recorded: from its symbols)")]
    for what in ("inputs", "outputs"):
        items = report[what]
        if items is None:
            lines.append(f"{what}: not recorded without opening the library (no wrapper source in the package)")
            continue
        lines.append(f"{what} ({len(items)}):")
        for i, item in enumerate(items):
            shape = item.get("shape")
            text = "?" if shape is None else "[" + ", ".join(
                "?" if d is None else str(d) if not isinstance(d, dict) else f"{d.get('min')}..{d.get('max')}"
                for d in shape) + "]"
            lines.append(f"  {i}: {item['name']} {item.get('dtype', '?')} {text}")
    constants = report["constants"]
    if constants is None:
        lines.append("constants: not recorded without opening the library")
    else:
        total = sum(c["nbytes"] or 0 for c in constants)
        lines.append(f"constants: {len(constants)}, {total} bytes")
        for c in sorted(constants, key=lambda c: -(c["nbytes"] or 0))[:largest]:
            lines.append(f"  {c['fqn'] or c['name']}: {c['dtype']} {c['shape']} ({c['nbytes']} bytes)")
    if report["weights_blob_bytes"] is not None:
        lines.append(f"weights blob: {report['weights_blob_bytes']} bytes (kept beside the library)")
    missing = report["missing_shims"]
    lines.append(f"aoti_torch_* functions needed: {len(report['shims'])}, "
                 + ("all implemented by aotirt" if not missing else f"{len(missing)} NOT implemented: "
                    + ", ".join(missing)))
    lines.append("optional libraries it will load: " + (", ".join(report["optional_libraries"]) or "none"))
    return "\n".join(lines)
