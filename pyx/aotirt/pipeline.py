"""The main job: an encoder once, then one greedy decoder step per token.

On CUDA the whole loop is queued on one stream: each step's `next_token`
output is the next step's `token` input without leaving the GPU, each token
is gathered into a device buffer, and the tokens come back through one copy
at the end. `sync_each` is the old behaviour, a copy after every step.
`graph` replays the decoder step as a CUDA graph: one launch per step
instead of one per kernel, and next_token fed back to token inside the graph.
"""

import time

import aotirt
from aotirt._device import DEVICE_CPU, parse_device

MODES = ("shared", "sync_each", "separate", "graph")


class GreedyDecoder:
    """The example encoder and decoder libraries, loaded for one device.

    Parameters
    ----------
    device : "cpu" or "cuda:N"
    mode : "shared", "sync_each", "separate" or "graph"
        shared: both handles on the device's shared stream, one copy at the
        end. sync_each: the same, plus a copy of the token after every step
        (what the reference backend used to do). separate: each handle on a
        stream of its own (ordered by events), one copy at the end. graph:
        as shared, with the decoder step captured once as a CUDA graph (on
        the first decode) and replayed for every step; a GPU only.
    """

    def __init__(self, device="cuda:0", mode="shared"):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        device_type, index = parse_device(device)
        cpu = device_type == DEVICE_CPU
        if mode == "graph" and cpu:
            raise ValueError("mode 'graph' replays CUDA graphs: it needs a CUDA device, not 'cpu'")
        self.device = device
        self.mode = mode
        own = mode == "separate" and not cpu
        self.encoder = aotirt.models.open("encoder", device, stream=aotirt.Stream.create(index) if own else None)
        self.decoder = aotirt.models.open("decoder", device, stream=aotirt.Stream.create(index) if own else None)
        self.graph = None  # the captured decoder step (mode "graph")

    def close(self):
        if self.graph is not None:
            self.graph.close()
        self.encoder.close()
        self.decoder.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def decode(self, frames, steps, start_token=0):
        """Greedy-decode `steps` tokens from `frames` ([T, F] float32).

        Returns the tokens as an int64 numpy array.
        """
        import numpy as np

        if steps < 1:
            raise ValueError(f"steps must be at least 1, got {steps}")
        (hidden,) = self.encoder.run([frames])
        stream = getattr(self.decoder, "stream", None)
        token = aotirt.asarray(np.array([start_token], np.int64), self.device, stream=stream)
        tokens = aotirt.empty((steps,), "int64", self.device, stream=stream)
        if self.mode == "graph":
            return self._decode_by_replays(hidden, token, tokens, steps)
        # Looked up once: this loop is what time_side_by_side() measures.
        run = self.decoder.run
        sync_each = self.mode == "sync_each"
        for i in range(steps):
            _logits, token = run([hidden, token])
            tokens.narrow(0, i, 1).copy_(token)
            if sync_each:
                token.numpy()
        return tokens.numpy()  # the one host wait

    def _decode_by_replays(self, hidden, token, tokens, steps):
        if self.graph is None:
            # next_token (output 1) becomes token (input 1) inside the graph.
            self.graph = self.decoder.capture([hidden, token], feedback=[(1, 1)])
        # The first step copies this utterance's hidden and start token in;
        # each later step takes the token the previous one fed back.
        replay = self.graph.replay
        _logits, next_token = replay([hidden, token])
        tokens.narrow(0, 0, 1).copy_(next_token)  # before the next replay rewrites it
        for i in range(1, steps):
            replay()
            tokens.narrow(0, i, 1).copy_(next_token)
        return tokens.numpy()  # the one host wait


def time_side_by_side(decoders, frames, steps, repeats=5):
    """Median seconds per token of each decoder's decode(), by mode.

    After one warm-up each (which captures a graph), the decoders take turns,
    one decode each per round: a host's speed drifts over seconds on a shared
    machine, and the ratios between modes must not depend on which one ran
    while it was slow.
    """
    import statistics

    if len({d.mode for d in decoders}) != len(decoders):
        raise ValueError("time_side_by_side: one decoder per mode")
    for decoder in decoders:
        decoder.decode(frames, steps)
    times = {decoder.mode: [] for decoder in decoders}
    for _ in range(repeats):
        for decoder in decoders:
            start = time.perf_counter()
            decoder.decode(frames, steps)
            times[decoder.mode].append((time.perf_counter() - start) / steps)
    return {mode: statistics.median(samples) for mode, samples in times.items()}


def demo_frames(seed=0):
    """Seeded random frames of the example encoder's input shape."""
    import numpy as np

    from aotirt import _layout

    return np.random.default_rng(seed).standard_normal((_layout.T, _layout.F)).astype(np.float32)
