"""The papers' solvers, one module per algorithm family: pdprox, block_fw, agm, appa, incremental,
and the DRSVM's full-batch drsvm_pd and drsvm_ipm."""
