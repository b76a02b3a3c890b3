"""The router's statistics (RTL): the state of each cycle and the counters behind the status
outputs.

The state (``state``, codes of :data:`~pymtl_fp.cluster.hw.router_config.STATES`) is decided from
registers, in this order: a scalar unit runs or ran last cycle (``io``); a MOVE / REDUCE / RELAY
waits while quiet (``stall_in`` with room in its output buffers, else ``stall_out``); the engine
computed last cycle (a command just issued, or the last command was a compute and the engine was
busy: ``compute``); a transfer happened last cycle (``io``); the feeder waits for a link
(``stall_in``); the drainer is blocked (``stall_out``); anything else is under way (``engine``);
the program has ended (``done``); else ``stall_out``.  Counters (32-bit, wrap): ``cycle``,
``cnt[state]``, beats sent (``out_fire``) and received (``in_fire``) per link/host port.  Cycle for
cycle the statistics of :class:`~pymtl_fp.cluster.hw.RouterCL.RouterCL`.
"""

from pymtl3 import Bits3, Bits32, Component, InPort, OutPort, Wire, update, update_ff

from pymtl_fp.cluster.hw.router_config import STATES

S_COMPUTE, S_IO, S_STALL_IN, S_STALL_OUT, S_ENGINE, S_DONE = (Bits3(k) for k in range(len(STATES)))


class RouterStatusRTL(Component):
    def construct(s):
        W0, W1 = Bits32(0), Bits32(1)
        NS = len(STATES)

        s.unit_busy = InPort()
        s.unit_start = InPort()
        s.link_wait = InPort()   # a MOVE / REDUCE / RELAY, quiet
        s.mv_room = InPort()
        s.cmd_fire = InPort()
        s.eng_cmd = InPort()     # the current instruction is an engine command
        s.busy = InPort()        # the engine's
        s.io = InPort()          # a din / dout / link-input transfer at this edge
        s.wait_in = InPort()
        s.blocked = InPort()
        s.active = InPort()      # not HALT, or the feeder or the drainer has a move
        s.halted = InPort()
        s.out_fire = [InPort() for _ in range(3)]
        s.in_fire = [InPort() for _ in range(3)]
        s.state = OutPort(3)
        s.cycle = OutPort(32)
        s.cnt = [OutPort(32) for _ in range(NS)]
        s.sent = [OutPort(32) for _ in range(3)]
        s.recv = [OutPort(32) for _ in range(3)]

        s.q_compute = Wire()
        s.q_io = Wire()
        s.q_unit = Wire()
        s.q_busy = Wire()
        s.last_compute = Wire()

        @update
        def up_status_state():
            if s.q_unit | s.unit_busy:
                s.state @= S_IO
            elif s.link_wait:
                if s.mv_room:
                    s.state @= S_STALL_IN
                else:
                    s.state @= S_STALL_OUT
            elif s.q_compute | (s.last_compute & s.q_busy):
                s.state @= S_COMPUTE
            elif s.q_io:
                s.state @= S_IO
            elif s.wait_in:
                s.state @= S_STALL_IN
            elif s.blocked:
                s.state @= S_STALL_OUT
            elif s.active:
                s.state @= S_ENGINE
            elif s.halted:
                s.state @= S_DONE
            else:
                s.state @= S_STALL_OUT

        @update_ff
        def up_status_regs():
            if s.reset:
                s.cycle <<= W0
                s.last_compute <<= 0
                s.q_compute <<= 0
                s.q_io <<= 0
                s.q_unit <<= 0
                s.q_busy <<= 0
                for i in range(NS):
                    s.cnt[i] <<= W0
                for i in range(3):
                    s.sent[i] <<= W0
                    s.recv[i] <<= W0
            else:
                s.cycle <<= s.cycle + W1
                for i in range(NS):
                    if s.state == Bits3(i):
                        s.cnt[i] <<= s.cnt[i] + W1
                for i in range(3):
                    if s.out_fire[i]:
                        s.sent[i] <<= s.sent[i] + W1
                    if s.in_fire[i]:
                        s.recv[i] <<= s.recv[i] + W1
                if s.cmd_fire:
                    s.last_compute <<= s.eng_cmd
                s.q_compute <<= s.cmd_fire & s.eng_cmd
                s.q_io <<= s.io
                s.q_unit <<= s.unit_start | s.unit_busy
                s.q_busy <<= s.busy

    def line_trace(s):
        return f"S{int(s.state)}"
