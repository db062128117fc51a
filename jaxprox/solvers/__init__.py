"""Solvers, one file per algorithm: pdprox, block_fw (with its layout, selections and dual steps),
agm, svrg, sdca, appa, dual_appa, incremental, drsvm_pd, drsvm_ipm, svm_newton, bias_svm_newton, working_set."""
