"""The status port every link level has: error and retransmission counters.

``LinkRTL`` drives it from its status registers; ``LinkFL`` and ``LinkCL`` (which model a
fault-free link) drive zeros.  Counters are 32 bits and wrap.  Leave the port unconnected when
you do not need it.
"""

from pymtl3 import Bits1, Bits32, bitstruct


@bitstruct
class LinkStatus:
    retransmissions: Bits32  #: frames sent again (go-back-N)
    timeouts: Bits32  #: sender timeouts (rewinds without a NAK)
    naks: Bits32  #: NAKs sent by the receiver
    crc_errors: Bits32  #: complete frames with a bad CRC-32
    frame_errors: Bits32  #: framing errors (lost, mangled or stray flits, bad padding)
    seq_errors: Bits32  #: intact frames with an unexpected sequence number (dropped)
    overflow: Bits1  #: sticky: the receive buffer overflowed (credit protocol violated; never)


STATUS_FIELDS = ("retransmissions", "timeouts", "naks", "crc_errors", "frame_errors",
                 "seq_errors", "overflow")


def status_dict(status) -> dict:
    """A LinkStatus value as a dict of ints."""
    return {f: int(getattr(status, f)) for f in STATUS_FIELDS}
