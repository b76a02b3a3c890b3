"""The host at the ends of the chain (Python behaviour behind val/rdy ports).

* ``img_out`` -> link -> node 0 ``fwd_in``: the images of every step, in order, in node 0's
  activation layout (one element per message).
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

from pymtl_fp.engine.msgs import (
    data_type,
    from_word,
    pack_act,
    tiles,
    to_word,
    unpack_act,
)
from pymtl_fp.golden.loss import softmax_xent_grad


def row_grad(net, fmt, logits_row, label, batch, relu_last) -> np.ndarray:
    """The loss gradient of one image as in the golden whole-batch call (see the module doc)."""
    rep = np.repeat(np.asarray(logits_row, dtype=np.int64)[None], batch, axis=0)
    _, g = softmax_xent_grad(rep, np.full(batch, int(label)), logit_frac=fmt.act.frac, grad_format=fmt.grad,
                             loss_scale_log2=fmt.loss_scale_log2, logit_bits=fmt.act.bits)
    g = g[0]
    if relu_last:
        g = np.where(np.asarray(logits_row) > 0, g, 0)
    return g


class HostCL(Component):
    def construct(s, ecfg, net, fmt, images, labels, batch, p_out=None):
        s.DataT = data_type(ecfg)
        s.bits = ecfg.stream_bits
        s.P = ecfg.P                                        # node 0's layout: images
        s.P_out = ecfg.P if p_out is None else int(p_out)   # node N-1's layout: logits, gradients
        s.img_out = SendIfcRTL(s.DataT)
        s.logit_in = RecvIfcRTL(s.DataT)
        s.grad_out = SendIfcRTL(s.DataT)
        s.up_in = RecvIfcRTL(s.DataT)
        s.net, s.fmt, s.batch = net, fmt, batch
        s.images = np.asarray(images)  # (steps*B, C, H, W)
        s.labels = np.asarray(labels)
        s.out_shape = net.shapes()[-1]
        K, ho, wo = s.out_shape
        s.logit_elems = tiles(K, s.P_out) * ho * wo * s.P_out
        s.relu_last = net.param_layers()[-1].relu
        s._reset_state()

        @update_ff
        def up_host():
            if s.reset:
                s._reset_state()
                s.img_out.val <<= 0
                s.grad_out.val <<= 0
                s.logit_in.rdy <<= 0
                s.up_in.rdy <<= 0
                return
            o = s._step(bool(s.img_out.val & s.img_out.rdy), bool(s.grad_out.val & s.grad_out.rdy),
                        bool(s.logit_in.val & s.logit_in.rdy), s.logit_in.msg,
                        bool(s.up_in.val & s.up_in.rdy))
            s.img_out.val <<= o[0]
            s.img_out.msg <<= s.DataT(o[1])
            s.grad_out.val <<= o[2]
            s.grad_out.msg <<= s.DataT(o[3])
            s.logit_in.rdy <<= 1
            s.up_in.rdy <<= 1

    def _reset_state(s):
        s.cycle = 0
        s.img_queue = deque()
        for img in s.images:
            s.img_queue.extend(int(v) for v in pack_act(img[None], s.P).reshape(-1))
        s.img_total = len(s.img_queue)
        s.grad_queue = deque()
        s.cur_logits = []
        s.logits = []         # per image, (K,) or (K, ho, wo)
        s.losses = []
        s.unexpected = 0
        s.last_logit_cycle = None
        s.logit_cycles = []   # cycle each image's logits completed

    def done_images(s) -> int:
        return len(s.logits)

    def _step(s, img_fired, grad_fired, logit_fired, logit_msg, up_fired):
        s.cycle += 1
        if img_fired:
            s.img_queue.popleft()
        if grad_fired:
            s.grad_queue.popleft()
        if up_fired:
            s.unexpected += 1
        if logit_fired:
            s.cur_logits.append(from_word(int(logit_msg), s.bits))
            if len(s.cur_logits) == s.logit_elems:
                s._image_done()
        o_img = (1, to_word(s.img_queue[0], s.bits)) if s.img_queue else (0, 0)
        o_grad = (1, to_word(s.grad_queue[0], s.bits)) if s.grad_queue else (0, 0)
        return o_img + o_grad

    def _image_done(s):
        K, ho, wo = s.out_shape
        words = np.asarray(s.cur_logits, dtype=np.int64).reshape(-1, s.P_out)
        y = unpack_act(words, (1, K, ho, wo), s.P_out)[0]
        s.cur_logits = []
        i = len(s.logits)
        s.logits.append(y)
        s.logit_cycles.append(s.cycle)
        g = row_grad(s.net, s.fmt, y.reshape(-1), s.labels[i], s.batch, s.relu_last)
        s.grad_queue.extend(int(v) for v in pack_act(g.reshape(1, K, ho, wo), s.P_out).reshape(-1))
        if len(s.logits) % s.batch == 0:
            lo = len(s.logits) - s.batch
            batch_logits = np.stack([v.reshape(-1) for v in s.logits[lo:]])
            loss, _ = softmax_xent_grad(batch_logits, s.labels[lo:lo + s.batch], logit_frac=s.fmt.act.frac,
                                        grad_format=s.fmt.grad, loss_scale_log2=s.fmt.loss_scale_log2,
                                        logit_bits=s.fmt.act.bits)
            s.losses.append(loss)

    def line_trace(s):
        return f"host:{len(s.logits)}"
