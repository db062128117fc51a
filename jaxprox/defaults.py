"""Defaults that follow the data: step budgets, the rescaling policy, and when a derivative's
linear system is solved densely.
"""
from __future__ import annotations

#: up to this many unknowns the tangent system of implicit differentiation is solved densely (its
#: Jacobian by one batched JVP, a least-squares solve); matrix-free GMRES above
DENSE_TANGENT_MAX = 1024
