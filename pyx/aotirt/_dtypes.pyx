"""The dtypes aotirt knows: one table, read from the core's.

The codes are torch's (c10 ScalarType), the ``aotirt_dtype`` enum of
include/aotirt/aotirt.h. Each one's name, item size and kind come from the
core (``aotirt_dtype_name``, ``aotirt_dtype_itemsize``, ``aotirt_dtype_kind``);
a code the core does not support is not in the table. Every conversion of
dtypes in aotirt (names, numpy dtypes, buffer formats, typestrs of the CUDA
array interface) reads this table.

numpy is imported only when a numpy dtype is asked for.

Module order: this module cimports only the C API (_capi); every module that
handles dtypes cimports it.
"""

from libc.stdint cimport int32_t

from aotirt._capi cimport (
    AOTIRT_DTYPE_BFLOAT16, AOTIRT_DTYPE_BOOL, AOTIRT_DTYPE_FLOAT8_E4M3FN, AOTIRT_DTYPE_FLOAT8_E5M2,
    AOTIRT_DTYPE_FLOAT16, AOTIRT_DTYPE_FLOAT32, AOTIRT_DTYPE_FLOAT64, AOTIRT_DTYPE_INT8, AOTIRT_DTYPE_INT16,
    AOTIRT_DTYPE_INT32, AOTIRT_DTYPE_INT64, AOTIRT_DTYPE_UINT8, AOTIRT_DTYPE_KIND_BOOL, AOTIRT_DTYPE_KIND_FLOATING,
    AOTIRT_DTYPE_KIND_SIGNED, AOTIRT_DTYPE_KIND_UNSIGNED, aotirt_dtype_itemsize, aotirt_dtype_kind, aotirt_dtype_name,
)

# Every code of the aotirt_dtype enum, in its order.
_ENUM = (AOTIRT_DTYPE_UINT8, AOTIRT_DTYPE_INT8, AOTIRT_DTYPE_INT16, AOTIRT_DTYPE_INT32, AOTIRT_DTYPE_INT64,
         AOTIRT_DTYPE_FLOAT16, AOTIRT_DTYPE_FLOAT32, AOTIRT_DTYPE_FLOAT64, AOTIRT_DTYPE_BOOL,
         AOTIRT_DTYPE_BFLOAT16, AOTIRT_DTYPE_FLOAT8_E5M2, AOTIRT_DTYPE_FLOAT8_E4M3FN)
# The kinds of aotirt_dtype_kind(): their names, and their letters in the
# typestrs of the array interfaces.
_KINDS = {AOTIRT_DTYPE_KIND_BOOL: ("bool", "b"), AOTIRT_DTYPE_KIND_SIGNED: ("signed", "i"),
          AOTIRT_DTYPE_KIND_UNSIGNED: ("unsigned", "u"), AOTIRT_DTYPE_KIND_FLOATING: ("floating", "f")}
# The buffer-protocol (struct module) format characters of the dtypes that
# numpy has natively. The others have no format: numpy will not export an
# ml_dtypes array of them through the buffer protocol (formatless_dtype).
_FORMATS = {"uint8": "B", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "float16": "e",
            "float32": "f", "float64": "d", "bool": "?"}
# Other format characters that mean a dtype of the table when the item size
# agrees (a C long is int64 where it has 8 bytes).
_FORMAT_ALIASES = {"l": "int64"}
# Other names dtype_code_of() takes.
_NAME_ALIASES = {"bool_": "bool"}


cdef class DType:
    """One dtype aotirt supports: a row of :data:`DTYPES`.

    Attributes
    ----------
    code : int
        Its code (torch's c10 ScalarType, as tensors carry it).
    name : str
        numpy's name for it (``"float32"``, ``"bfloat16"``, ...).
    itemsize : int
        Bytes per element.
    kind : str
        ``"bool"``, ``"signed"``, ``"unsigned"`` or ``"floating"``.
    format, typestr : str or None
        Its buffer-protocol format character and its
        ``__cuda_array_interface__`` typestr; None where numpy has no such
        dtype of its own (it has bfloat16 and the float8s through ml_dtypes).
    """

    def __init__(self):
        raise TypeError("DType rows come from aotirt._dtypes.DTYPES")

    @property
    def is_floating(self):
        return is_floating(self.code)

    def __repr__(self):
        return f"<aotirt dtype {self.name}: code {self.code}, {self.itemsize} bytes, {self.kind}>"


cdef dict _by_code = {}
cdef dict _by_name = {}
cdef dict _by_format = {}
cdef dict _by_typestr = {}  # by kind letter and size, the byte order left out


cdef DType _row(int32_t code):
    """The table's row of `code`, or None when the core does not support it."""
    cdef const char* name = aotirt_dtype_name(code)
    kind = _KINDS.get(aotirt_dtype_kind(code))
    if name is NULL or kind is None or aotirt_dtype_itemsize(code) == 0:
        return None
    cdef DType row = DType.__new__(DType)
    row.code = code
    row.name = name.decode("ascii")
    row.itemsize = aotirt_dtype_itemsize(code)
    row.kind = kind[0]
    row.format = _FORMATS.get(row.name)
    if row.format is not None:
        row.typestr = ("|" if row.itemsize == 1 else "<") + kind[1] + str(row.itemsize)
    return row


for _code in _ENUM:
    _found = _row(_code)
    if _found is not None:
        _by_code[_found.code] = _found
        _by_name[_found.name] = _found
        if _found.format is not None:
            _by_format[_found.format] = _found
            _by_typestr[_found.typestr[1:]] = _found
for _alias, _name in _NAME_ALIASES.items():
    if _name in _by_name:
        _by_name[_alias] = _by_name[_name]
for _alias, _name in _FORMAT_ALIASES.items():
    if _name in _by_name:
        _by_format[_alias] = _by_name[_name]
del _code, _found, _alias, _name

DTYPES = dict(_by_code)
"""The dtypes aotirt supports: code -> :class:`DType`, in the enum's order."""


cdef object _np = None


cdef object numpy_module():
    global _np
    if _np is None:
        import numpy
        _np = numpy
    return _np


cdef DType dtype_row(int32_t code):
    return <DType>_by_code.get(code)


cdef str dtype_name(int32_t code):
    row = _by_code.get(code)
    return (<DType>row).name if row is not None else None


cdef bint is_floating(int32_t code) noexcept nogil:
    return aotirt_dtype_kind(code) == AOTIRT_DTYPE_KIND_FLOATING


cdef int32_t dtype_code_of(object dtype) except -1:
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if name is None:
        name = numpy_module().dtype(dtype).name  # a scalar type such as np.float32
    row = _by_name.get(name)
    if row is None:
        raise TypeError(f"dtype {dtype!r} is not supported "
                        f"(supported: {', '.join(sorted(_by_name))})")
    return (<DType>row).code


# numpy dtypes by code, filled on first use: np.dtype(name) is a parse that
# copy_to_host() and Tensor.dtype would otherwise repeat on every call, and
# filling it at import time would import numpy with aotirt.
cdef dict _numpy_dtypes = {}


cdef object numpy_dtype(int32_t code):
    dt = _numpy_dtypes.get(code)
    if dt is not None:
        return dt
    row = _by_code.get(code)
    if row is None:
        raise TypeError(f"dtype code {code} has no numpy equivalent")
    cdef DType r = <DType>row
    if r.format is None:
        try:
            import ml_dtypes
        except ImportError:
            # Not cached: installing ml_dtypes later makes it work.
            raise TypeError(f"numpy has no {r.name}: install ml_dtypes, or read the raw bits with "
                            f"copy_to_host(t, out=numpy.empty(t.shape, numpy.uint{8 * r.itemsize}))") from None
        dt = numpy_module().dtype(getattr(ml_dtypes, r.name))
    else:
        dt = numpy_module().dtype(r.name)
    _numpy_dtypes[code] = dt
    return dt


cdef str buffer_format(Py_buffer* view):
    # The buffer protocol says a NULL format means unsigned bytes.
    return (<bytes>view.format).decode("ascii") if view.format is not NULL else "B"


cdef int32_t buffer_dtype(Py_buffer* view, str what) except -1:
    fmt = buffer_format(view)
    if fmt[:1] in ("<", "=", "@", "|"):
        fmt = fmt[1:]
    row = _by_format.get(fmt)
    if row is None or (<DType>row).itemsize != view.itemsize:
        raise TypeError(f"{what}: buffer format {fmt!r} is not a supported dtype "
                        f"(supported: {', '.join(sorted([r.name for r in _by_code.values()]))})")
    return (<DType>row).code


cdef int32_t formatless_dtype(object array):
    dt = getattr(array, "dtype", None)
    # numpy's own dtypes are built in (isbuiltin 1, or 0 for structured and
    # sized ones); ml_dtypes' are user-defined (2). Asked first because a
    # dtype's name is built anew on every read (2 us), and this runs on every
    # host array a call takes in or copies out.
    if getattr(dt, "isbuiltin", None) != 2:
        return -1
    name = getattr(dt, "name", None)
    if not isinstance(name, str):
        return -1
    row = _by_name.get(name)
    if row is None or (<DType>row).format is not None or getattr(dt, "itemsize", None) != (<DType>row).itemsize:
        return -1
    return (<DType>row).code


cdef int32_t typestr_dtype(object typestr, str what) except -1:
    row = None
    if isinstance(typestr, str) and typestr[:1] in ("<", "|", "="):
        row = _by_typestr.get(typestr[1:])
    if row is None:
        supported = sorted([r.typestr for r in _by_code.values() if r.typestr is not None])
        raise TypeError(f"{what}: __cuda_array_interface__ typestr {typestr!r} is not a supported dtype "
                        f"(supported: {', '.join(supported)})")
    return (<DType>row).code
