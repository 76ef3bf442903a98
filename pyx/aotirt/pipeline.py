"""The main job: an encoder once, then one greedy decoder step per token.

The decode loop is the decoder handle's own (``handle.loop``): each step's
`next_token` output is the next step's `token` input without leaving the
device, the tokens are collected into a device tensor, and they come back
through one copy at the end. `sync_each` is the old behaviour, written out in
Python: a copy after every step. `graph` opens the decoder with
``graphs=True``: the loop then captures the step once as a CUDA graph with
next_token fed back to token inside it, and each step is one launch instead
of one per kernel.
"""

import time

import aotirt
from aotirt._device import DEVICE_CPU, parse_device

MODES = ("shared", "sync_each", "separate", "graph")


class GreedyDecoder:
    """The example encoder and decoder libraries, loaded for one device (or two).

    Parameters
    ----------
    device : "cpu" or "cuda:N"
        The encoder's device, and the decoder's unless `decoder_device` says.
    mode : "shared", "sync_each", "separate" or "graph"
        shared: both handles on the device's shared stream, the steps run
        by ``decoder.loop``, one copy at the end. sync_each: a Python loop of
        ``run``, plus a copy of the token after every step (what the
        reference backend used to do). separate: each handle on a stream of
        its own (ordered by events), ``decoder.loop``, one copy at the end.
        graph: as shared, the decoder opened with ``graphs=True``, so that
        the loop captures the step once as a CUDA graph (on the first
        decode) and replays it for every step; a GPU only.
    decoder_device : "cuda:N" or None
        Splits the pipeline across two GPUs: the decoder runs on this one,
        and the encoder's output is moved to it once per decode (a peer
        copy, ordered after the encoder by an event).
    """

    def __init__(self, device="cuda:0", mode="shared", decoder_device=None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        device_type, index = parse_device(device)
        decoder_type, decoder_index = parse_device(device if decoder_device is None else decoder_device)
        cpu = device_type == DEVICE_CPU
        if mode == "graph" and cpu:
            raise ValueError("mode 'graph' replays CUDA graphs: it needs a CUDA device, not 'cpu'")
        if decoder_type != device_type:
            raise ValueError(f"the encoder ({device!r}) and the decoder ({decoder_device!r}) run on GPUs or both "
                             f"on the CPU: a CPU tensor is not moved to a GPU model")
        self.device = device
        self.decoder_device = device if decoder_device is None else decoder_device
        self.mode = mode
        own = mode == "separate" and not cpu
        self.encoder = aotirt.models.open("encoder", device, stream=aotirt.Stream.create(index) if own else None)
        # On another GPU, the decoder's runs move the encoder's output to
        # theirs (a peer copy, ordered after the encoder by an event).
        self.decoder = aotirt.models.open("decoder", self.decoder_device,
                                          stream=aotirt.Stream.create(decoder_index) if own else None,
                                          graphs=mode == "graph")

    def close(self):
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
        token = aotirt.asarray(np.array([start_token], np.int64), self.decoder_device, stream=stream)
        if self.mode == "sync_each":
            return self._decode_syncing_each_step(hidden, token, steps, stream)
        # next_token (output 1) becomes token (input 1) on the device, and
        # is collected: (steps, 1) tokens.
        (tokens,), _outputs = self.decoder.loop([hidden, token], steps, feedback=[(1, 1)], collect=[1])
        return tokens.numpy().reshape(steps)  # the one host wait

    def _decode_syncing_each_step(self, hidden, token, steps, stream):
        # The comparison the other modes are measured against: the same
        # steps, with a host wait (a copy of the token) after each.
        tokens = aotirt.empty((steps,), "int64", self.decoder_device, stream=stream)
        run = self.decoder.run  # looked up once: this loop is what time_side_by_side() measures
        for i in range(steps):
            _logits, token = run([hidden, token])
            tokens.narrow(0, i, 1).copy_(token)
            token.numpy()
        return tokens.numpy()


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
