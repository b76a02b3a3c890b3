"""Energy: joules and GOPs/J of simulated training runs and of paper-scale designs.

* :mod:`.constants`: per-device-family energy constants with their ranges and sources, from one
  data file (``data/energy_constants.toml``);
* :mod:`.activity`: what a simulated node did (MACs, MAC-lane cycles, buffer bits by phase,
  measured link bits and busy cycles), the same at every level;
* :mod:`.model`: joules per phase of a cluster run, with the constants' low/high carried through
  (the ``energy`` section of ``pymtl-fp train``'s report);
* :mod:`.estimate`: the same model at paper scale (``pymtl-fp explore``), per image from the
  analytical cycle counts.
"""
