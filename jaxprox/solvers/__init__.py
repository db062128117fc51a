"""One file per paper (DESIGN.md): pdprox, block_fw, agm, appa, incremental."""
