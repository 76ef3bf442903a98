"""aten.convolution in float64 numpy, the tests' reference, and the output
layout torch's fake tensor gives it (the rules conv_layout.h implements,
written again here from torch's sources: meta_conv, then fake_impls.conv with
the backend's memory format)."""

import numpy as np


def expand(values, nd):
    values = list(values)
    return values * nd if len(values) == 1 else values


def conv(x, w, b=None, stride=(1,), padding=(0,), dilation=(1,), groups=1):
    """Not transposed: w [out, in / groups, *kernel]."""
    nd = x.ndim - 2
    stride, padding, dilation = (expand(v, nd) for v in (stride, padding, dilation))
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    kernel = w.shape[2:]
    out_size = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    group_in, group_out = w.shape[1], w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0], *out_size))
    for k in np.ndindex(*kernel):
        window = tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (out_size[i] - 1) + 1, stride[i])
                       for i in range(nd))
        patch = xp[(slice(None), slice(None)) + window]
        for g in range(groups):
            wk = w[g * group_out:(g + 1) * group_out][(slice(None), slice(None)) + k]
            out[:, g * group_out:(g + 1) * group_out] += np.einsum(
                "nc...,oc->no...", patch[:, g * group_in:(g + 1) * group_in], wk)
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nd)
    return out


def conv_transpose(x, w, b=None, stride=(1,), padding=(0,), dilation=(1,), output_padding=(0,), groups=1):
    """Transposed: w [in, out / groups, *kernel]; the adjoint of conv (input
    position i reaches output positions i * stride - padding + k * dilation)."""
    nd = x.ndim - 2
    stride, padding, dilation, output_padding = (expand(v, nd) for v in (stride, padding, dilation, output_padding))
    kernel = w.shape[2:]
    size = x.shape[2:]
    out_size = [(size[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + output_padding[i] + 1
                for i in range(nd)]
    full = [(size[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i] for i in range(nd)]
    group_in, group_out = w.shape[0] // groups, w.shape[1]
    out = np.zeros((x.shape[0], groups * group_out, *full))
    for k in np.ndindex(*kernel):
        window = tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (size[i] - 1) + 1, stride[i])
                       for i in range(nd))
        for g in range(groups):
            wk = w[g * group_in:(g + 1) * group_in][(slice(None), slice(None)) + k]
            out[(slice(None), slice(g * group_out, (g + 1) * group_out)) + window] += np.einsum(
                "nc...,co->no...", x[:, g * group_in:(g + 1) * group_in], wk)
    out = out[(slice(None), slice(None)) + tuple(slice(padding[i], padding[i] + out_size[i]) for i in range(nd))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nd)
    return out


# ---- layouts ---------------------------------------------------------------


def contiguous(shape):
    strides, step = [0] * len(shape), 1
    for d in reversed(range(len(shape))):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def channels_last(shape):
    """Element strides of [N, C, *spatial] over [N, *spatial, C] memory
    (c10's get_channels_last_strides: sizes of 0 are not counted as 1)."""
    strides = [0] * len(shape)
    strides[1] = 1
    step = shape[1]
    for d in range(len(shape) - 1, 1, -1):
        strides[d] = step
        step *= shape[d]
    strides[0] = step
    return tuple(strides)


def looks_channels_last(shape, strides, python=False):
    """c10's is_channels_last_strides_2d/3d; python=True for
    torch._prims_common.are_strides_like_channels_last (which grows the
    running minimum by a size when the stride, not the size, is above 1)."""
    if len(shape) not in (4, 5) or strides[1] == 0:
        return False
    order = [1, 3, 2, 0] if len(shape) == 4 else [1, 4, 3, 2, 0]
    low = 0
    for d in order:
        if shape[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d] * (shape[d] if (strides[d] if python else shape[d]) > 1 else 1)
    return True


def suggest(shape, strides, python=False):
    if looks_channels_last(shape, strides, python):
        return "channels_last" if len(shape) == 4 else "channels_last_3d"
    return "contiguous"


def to(shape, strides, fmt):
    """Tensor.to(memory_format=fmt): kept when it already suggests fmt."""
    if suggest(shape, strides) == fmt:
        return tuple(strides)
    return contiguous(shape) if fmt == "contiguous" else channels_last(shape)


def unsqueeze2(shape, strides):
    return (shape[0], shape[1], 1, shape[2]), (strides[0], strides[1], shape[2] * strides[2], strides[2])


def output_strides(in_shape, in_strides, w_shape, w_strides, out_shape, cuda=True, float64=False):
    """The strides of torch's fake output of aten.convolution."""
    k = len(w_shape)
    # meta_conv: channels_last (4-D only) when the input (CPU) or the input or
    # the weight (CUDA) is, by the Python rule.
    out = contiguous(out_shape)
    if k == 4 and (suggest(in_shape, in_strides, True) == "channels_last" or
                   (cuda and suggest(w_shape, w_strides, True) == "channels_last")):
        out = to(out_shape, out, "channels_last")
    # fake_impls.conv: the backend's memory format (the Empty backend for empty inputs).
    if in_shape[0] == 0 or in_shape[1] == 0:
        fmt = "contiguous"
    elif k == 3:
        x4 = unsqueeze2(in_shape, contiguous(in_shape))
        w4 = unsqueeze2(w_shape, w_strides)
        cl = suggest(*x4) == "channels_last" or suggest(*w4) == "channels_last"
        fmt = "channels_last" if cl and not (cuda and float64) else "contiguous"
    else:
        want = "channels_last" if k == 4 else "channels_last_3d"
        like = suggest(in_shape, in_strides) == want or suggest(w_shape, w_strides) == want
        fmt = want if like and not (float64 and (cuda or k == 5)) else "contiguous"
    if k == 3 and fmt == "channels_last":
        shape4, strides4 = unsqueeze2(out_shape, out)
        s = to(shape4, strides4, "channels_last")
        return (s[0], s[1], s[3])
    return to(out_shape, out, fmt)
