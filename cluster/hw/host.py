"""The host at the ends of the chain (Python behaviour behind val/rdy ports).

* ``img_out`` -> link -> node 0 ``fwd_in``: the images of every step, in order, in node 0's
  activation layout (``E = stream_lanes`` elements per message: an image is a whole number of
  beats, its elements being a multiple of the array side, which E divides).
* node N-1 ``fwd_out`` -> link -> ``logit_in``: one image's logits at a time, in node N-1's
  layout (``p_out``: its array side, which may differ from node 0's), as are the loss gradients.
* ``grad_out`` -> link -> node N-1 ``bwd_in``: the loss gradient of each image as soon as its
  logits are in.  It is the golden :func:`~pymtl_fp.golden.loss.softmax_xent_grad` of the
  *batch*: each row's gradient depends only on that row and the batch size ``N``, so the host
  calls the golden function on ``N`` copies of the row and keeps one (bit-identical to the row
  of the whole-batch call).  A last layer with ReLU masks where the logits are ``<= 0``.
* ``up_in`` <- node 0 ``bwd_out``: the first layer computes no data gradient, so nothing may
  arrive here (anything that does is counted as an error).

The batch loss (for reporting) is the golden function on the whole batch once its logits are in.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from pymtl3 import Component, update_ff
from pymtl3.stdlib.stream.ifcs import RecvIfcRTL, SendIfcRTL

from pymtl_fp.cluster.hw.host_side import side_beats
from pymtl_fp.direct import QUIET_FOREVER
from pymtl_fp.engine.encoding import unpack_beat
from pymtl_fp.engine.msgs import (
    data_type,
    pack_act,
    tiles,
    unpack_act,
)
from pymtl_fp.engine.packing import pack_input
from pymtl_fp.golden.loss import row_loss_grad, softmax_xent_grad


class HostModel:
    """What the host does with the streams, whatever drives them (the PyMTL3 :class:`HostCL`, or
    the compiled test bench of a Verilated cluster between its runs): the images to send, each
    image's logits as they arrive, the loss gradient it answers with, the losses."""

    def __init__(self, ecfg, net, fmt, images, labels, batch, p_out=None, pack=None):
        self.bits = ecfg.stream_bits
        self.E = ecfg.stream_lanes
        self.P = ecfg.P                                        # node 0's layout: images
        self.P_out = ecfg.P if p_out is None else int(p_out)   # node N-1's layout: logits, gradients
        self.net, self.fmt, self.batch = net, fmt, batch
        self.images = np.asarray(images)  # (steps*B, C, H, W)
        self.pack = pack  # (R, S, stride, pad): the first layer runs tap-packed
        self.labels = np.asarray(labels)
        self.out_shape = net.shapes()[-1]
        K, ho, wo = self.out_shape
        self.logit_elems = tiles(K, self.P_out) * ho * wo * self.P_out
        self.relu_last = net.rectified(len(net.layers))
        self.reset()

    def reset(self):
        self.cur_logits = []
        self.logits = []         # per image, (K,) or (K, ho, wo)
        self.losses = []
        self.unexpected = 0
        self.logit_cycles = []   # cycle each image's logits completed

    def image_elements(self) -> list:
        """Every element the host sends on the images' link, in order."""
        return [int(v) for img in self.images for v in pack_act(self.image(img), self.P).reshape(-1)]

    def image(self, img) -> np.ndarray:
        """One image as node 0 takes it: ``(1, C, H, W)``, or tap-packed ``(1, C*R*S, Ho, Wo)``."""
        if self.pack is None:
            return img[None]
        r, s, stride, pad = self.pack
        return pack_input(img[None], r, s, stride, pad)

    def image_beats(self) -> list:
        """The images' link messages: :meth:`image_elements` in beats of ``E``."""
        return self.beats(self.image_elements())

    def beats(self, elements) -> list:
        """Elements as beats of ``E`` (a whole number of them: every tensor the host sends or
        receives is padded to the array side, which ``E`` divides)."""
        return side_beats(elements, self.E, self.bits)

    def logit_beat(self, word: int, cycle: int) -> list:
        """One beat of logits arrived; returns the loss-gradient beats to send (see :meth:`logit`)."""
        grads = []
        for v in unpack_beat(word, self.E, self.bits):
            grads += self.logit(v, cycle)
        return self.beats(grads)

    def done_images(self) -> int:
        return len(self.logits)

    def logit(self, value: int, cycle: int) -> list:
        """One logit element arrived (signed); returns the loss-gradient elements to send when it
        completes an image, else ``[]``."""
        self.cur_logits.append(int(value))
        if len(self.cur_logits) < self.logit_elems:
            return []
        return self.image_done(self.cur_logits, cycle)

    def image_done(self, elements, cycle: int) -> list:
        K, ho, wo = self.out_shape
        words = np.asarray(elements, dtype=np.int64).reshape(-1, self.P_out)
        y = unpack_act(words, (1, K, ho, wo), self.P_out)[0]
        self.cur_logits = []
        i = len(self.logits)
        self.logits.append(y)
        self.logit_cycles.append(cycle)
        g = row_loss_grad(y.reshape(-1), self.labels[i], self.batch, self.fmt, self.relu_last)
        if len(self.logits) % self.batch == 0:
            lo = len(self.logits) - self.batch
            batch_logits = np.stack([v.reshape(-1) for v in self.logits[lo:]])
            loss, _ = softmax_xent_grad(batch_logits, self.labels[lo:lo + self.batch], logit_frac=self.fmt.act.frac,
                                        grad_format=self.fmt.grad, loss_scale_log2=self.fmt.loss_scale_log2,
                                        logit_bits=self.fmt.act.bits)
            self.losses.append(loss)
        return [int(v) for v in pack_act(g.reshape(1, K, ho, wo), self.P_out).reshape(-1)]


class HostCL(Component):
    """The host as a PyMTL3 component (cycle level).  Stream behaviour (the same as the compiled
    test bench of a Verilated cluster): a sending port offers the head of its queue in every cycle
    in which the queue is not empty, from the first cycle after reset; a receiving port is always
    ready from the first cycle after reset; the gradient of an image is offered from the cycle
    after its last logit arrived."""

    def construct(s, ecfg, net, fmt, images, labels, batch, p_out=None, pack=None):
        s.DataT = data_type(ecfg)
        s.bits = ecfg.stream_bits
        s.model = HostModel(ecfg, net, fmt, images, labels, batch, p_out, pack)
        s.img_out = SendIfcRTL(s.DataT)
        s.logit_in = RecvIfcRTL(s.DataT)
        s.grad_out = SendIfcRTL(s.DataT)
        s.up_in = RecvIfcRTL(s.DataT)
        s._reset_state()

        @update_ff
        def up_host():
            if s.reset:
                s._reset_state()
            else:
                s._step(bool(s.img_out.val & s.img_out.rdy), bool(s.grad_out.val & s.grad_out.rdy),
                        bool(s.logit_in.val & s.logit_in.rdy), s.logit_in.msg, bool(s.up_in.val & s.up_in.rdy))
            iq, gq = s.img_queue, s.grad_queue
            s.img_out.val <<= 1 if iq else 0
            s.img_out.msg <<= s.DataT(iq[0]) if iq else s.DataT(0)
            s.grad_out.val <<= 1 if gq else 0
            s.grad_out.msg <<= s.DataT(gq[0]) if gq else s.DataT(0)
            s.logit_in.rdy <<= 1
            s.up_in.rdy <<= 1

    def _reset_state(s):
        s.cycle = 0
        s.model.reset()
        s.img_queue = deque(s.model.image_beats())  # (beat words)
        s.grad_queue = deque()

    def done_images(s) -> int:
        return s.model.done_images()

    def _step(s, img_fired, grad_fired, logit_fired, logit_msg, up_fired):
        s.cycle += 1
        if img_fired:
            s.img_queue.popleft()
        if grad_fired:
            s.grad_queue.popleft()
        if up_fired:
            s.model.unexpected += 1
        if logit_fired:
            s.grad_queue.extend(s.model.logit_beat(int(logit_msg), s.cycle))

    # ---- the direct protocol (pymtl_fp.direct) -------------------------------------------
    DIRECT_PORTS = (("img_out", "send"), ("logit_in", "recv"), ("grad_out", "send"), ("up_in", "recv"))

    def direct_bind(s, ch):
        s._dc = (ch["img_out"], ch["logit_in"], ch["grad_out"], ch["up_in"])

    def direct_reset(s):
        s._reset_state()
        s.direct_drive()

    def direct_edge(s):
        img, logit, grad, up = s._dc
        s._step(img.val and img.rdy, grad.val and grad.rdy, logit.val and logit.rdy, logit.msg, up.val and up.rdy)

    def direct_drive(s):
        img, logit, grad, up = s._dc
        iq, gq = s.img_queue, s.grad_queue
        img.val, img.msg = (1, iq[0]) if iq else (0, 0)
        grad.val, grad.msg = (1, gq[0]) if gq else (0, 0)
        logit.rdy = up.rdy = 1

    def direct_quiet(s):
        img, logit, grad, up = s._dc
        if (img.val and img.rdy) or (grad.val and grad.rdy) or (logit.val and logit.rdy) or (up.val and up.rdy):
            return 0
        return QUIET_FOREVER

    def direct_skip(s, n):
        s.cycle += n

    def line_trace(s):
        return f"host:{s.model.done_images()}"
