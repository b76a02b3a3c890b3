"""The address generator's loop levels and address units: constants its RTL units share
(:class:`~pymtl_fp.engine.AddrGenRTL.AddrGenRTL` and the units it wires)."""

NL = 7  #: loop levels of the address generator
#: the loop levels whose counter x stride terms are accumulated (levels 3, 5 and 6 enter an
#: address linearly or through a derived coordinate)
LEVELS = (0, 1, 2, 4)
NQ = len(LEVELS)
#: the units: an input-side map, an output-side map, a weight word, the result's flat index
AU_MAP, AU_OUT, AU_WGT, AU_IDX = range(4)
NAU = 4
NPROD = 3  #: the units with a product (all but IDX)
