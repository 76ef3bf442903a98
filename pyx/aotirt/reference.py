"""A numpy reference for the encoder/decoder example models.

Reads the same weights files as the libraries and computes what they are
specified to compute, in float64 (from the float32 weights and inputs), so
that the libraries' float32 results can be judged against it. numpy is
imported inside the functions: importing this module does not import it.

Examples
--------
>>> from aotirt import reference
>>> enc, dec = reference.load_weights("encoder"), reference.load_weights("decoder")
>>> hidden = reference.encoder(frames, enc)                  # doctest: +SKIP
>>> tokens = reference.greedy(frames, 0, 16, enc, dec)       # doctest: +SKIP
"""

from aotirt import _layout


def load_weights(name, path=None):
    """Model `name`'s weights as a dict of float32 arrays, by tensor name.

    `path` defaults to the weights file that ships with the model.
    """
    import numpy as np

    if path is None:
        from aotirt import models

        path = models.weights(name)
    flat = np.fromfile(path, dtype="<f4")
    expected = _layout.nbytes(name) // 4
    if flat.size != expected:
        raise ValueError(f"{path} holds {flat.size} float32 values, the {name} model has {expected}")
    return {tensor: value.astype(np.float32) for tensor, value in _layout.split(name, flat).items()}


def gelu(x):
    """GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    import numpy as np

    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def conv1d_k3(x, w, b=None):
    """Convolution over time, kernel 3, padding 1: x [T, Cin], w [Cout, Cin, 3] -> [T, Cout]."""
    import numpy as np

    x = np.asarray(x, np.float64)
    t = x.shape[0]
    padded = np.concatenate([np.zeros((1, x.shape[1])), x, np.zeros((1, x.shape[1]))])
    windows = np.stack([padded[j:j + t] for j in range(3)], axis=1)  # [T, 3, Cin]: x[t + j - 1]
    out = np.einsum("tjc,ocj->to", windows, np.asarray(w, np.float64))
    return out if b is None else out + b


def layer_norm(x, gamma, beta, eps=_layout.LAYER_NORM_EPS):
    """Over the last dimension, with the population variance."""
    import numpy as np

    x = np.asarray(x, np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def attention(q, k, v):
    """One query: softmax(k @ q / sqrt(D)) @ v, max-subtracted."""
    import numpy as np

    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    if k.shape[0] == 0:
        return np.zeros(q.shape[0])
    scores = k @ q / np.sqrt(q.shape[0])
    p = np.exp(scores - scores.max())
    return (p / p.sum()) @ v


def encoder(frames, weights=None):
    """frames [T, F] -> hidden [T, D], float64."""
    import numpy as np

    w = weights if weights is not None else load_weights("encoder")
    x = gelu(conv1d_k3(np.asarray(frames, np.float64), w["conv_w"], w["conv_b"]))
    return layer_norm(x @ w["lin_w"].astype(np.float64) + w["lin_b"], w["gamma"], w["beta"])


def decoder_step(hidden, token, weights=None):
    """One greedy step: hidden [T, D], token (int) -> (logits [V] float64, next token int)."""
    return _decoder_steps(hidden, weights)(token)


def _decoder_steps(hidden, weights):
    """A function token -> (logits, next token) for one `hidden`.

    The float64 weights and the attention keys and values (hidden @ wk,
    hidden @ wv) depend on the utterance only, not on the token: computed
    here once, not at every step of greedy().
    """
    import numpy as np

    w = weights if weights is not None else load_weights("decoder")
    f64 = {name: a.astype(np.float64) for name, a in w.items()}
    hidden = np.asarray(hidden, np.float64)
    k, v = hidden @ f64["wk"], hidden @ f64["wv"]

    def step(token):
        x = f64["embedding"][int(token)]
        ctx = attention(x @ f64["wq"], k, v)
        m = gelu((x + ctx) @ f64["w1"] + f64["b1"])
        logits = m @ f64["w2"] + f64["b2"]
        return logits, int(np.argmax(logits))

    return step


def greedy(frames, token, steps, encoder_weights=None, decoder_weights=None):
    """Encoder once, then `steps` decoder steps from `token`: the tokens produced."""
    enc = encoder_weights if encoder_weights is not None else load_weights("encoder")
    dec = decoder_weights if decoder_weights is not None else load_weights("decoder")
    step = _decoder_steps(encoder(frames, enc), dec)
    tokens = []
    for _ in range(steps):
        _logits, token = step(token)
        tokens.append(token)
    return tokens
