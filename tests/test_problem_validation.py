"""Input validation of the problem classes (ERM, BiasSVM, ERLPBoost, F1SVM): a clear Python error
before any tracing for bad data and ill-posed strengths (DESIGN.md, Conventions), and one float
dtype throughout, so float32 data solve in float32 with ``jax_enable_x64`` on."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties

RNG = np.random.default_rng(0)
X0 = RNG.standard_normal((8, 3))
Y0 = np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0])


def _erm(X, y, lam=0.1):
    return jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))


def _bias(X, y, lam=0.1):
    return jp.BiasSVM(X, y, lam)


def _f1(X, y, lam=0.1):
    return jp.F1SVM(X, y, lam, mu=0.1)


def _boost(X, y, lam=0.1):
    """ERLPBoost's data is the (t, n) edge matrix ``U[i, j] = y_j h_i(x_j)`` (no labels): here
    ``U = X^T``, ``t`` features as hypotheses on ``n`` examples."""
    return jp.ERLPBoost(np.asarray(X).T, lam)


LABELLED = {"ERM": _erm, "BiasSVM": _bias, "F1SVM": _f1}
ALL = {**LABELLED, "ERLPBoost": _boost}


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_data(name, bad):
    X = X0.copy()
    X[2, 1] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        ALL[name](X, Y0)


@pytest.mark.parametrize("name", LABELLED)
def test_non_finite_labels(name):
    y = Y0.copy()
    y[3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite|labels must be in"):
        LABELLED[name](X0, y)


@pytest.mark.parametrize("name", LABELLED)
def test_labels_not_pm1(name):
    with pytest.raises(ValueError, match=r"labels (must be )?in \{-1, \+1\}"):
        LABELLED[name](X0, np.where(Y0 > 0, 1.0, 0.0))


@pytest.mark.parametrize("name", LABELLED)
def test_string_labels(name):
    with pytest.raises(TypeError, match="y must be numeric, got strings"):
        LABELLED[name](X0, np.where(Y0 > 0, "yes", "no"))


@pytest.mark.parametrize("name", ALL)
def test_string_data(name):
    with pytest.raises(TypeError, match="must be numeric, got strings"):
        ALL[name](X0.astype(str), Y0)


@pytest.mark.parametrize("name", LABELLED)
def test_mismatched_shapes(name):
    with pytest.raises(ValueError, match="8 samples|shape \\(8,\\)"):
        LABELLED[name](X0, Y0[:5])


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("shape", [(0, 3), (8, 0)])
def test_empty_data(name, shape):
    y = Y0[: shape[0]]
    with pytest.raises(ValueError, match="at least one"):
        ALL[name](np.zeros(shape), y)


@pytest.mark.parametrize("name", ALL)
def test_negative_strength(name):
    with pytest.raises(ValueError, match="non-negative|>= 0"):
        ALL[name](X0, Y0, lam=-0.1)


@pytest.mark.parametrize("name", ["BiasSVM", "F1SVM", "ERLPBoost"])
def test_zero_strength_where_the_dual_divides_by_it(name):
    with pytest.raises(ValueError, match="must be > 0"):
        ALL[name](X0, Y0, lam=0.0)


def test_bias_svm_strength_below_rounding():
    """lam = 1e-14 on separable data overflowed the AGM's dual iteration to NaN; its dual run
    refuses it before tracing, with the bound in the message, in float64 and (at a larger floor)
    in float32. The problem itself is well posed (BiasSVMNewton works on the primal)."""
    Xs = RNG.standard_normal((12, 3))
    ys = np.where(Xs[:, 0] > 0, 1.0, -1.0)
    with pytest.raises(ValueError, match="below what the SVM dual can resolve in float64"):
        jp.solve(jp.BiasSVM(Xs, ys, 1e-14), jp.AGM())
    with pytest.raises(ValueError, match="below what the SVM dual can resolve in float32"):
        jp.solve(jp.BiasSVM(jnp.asarray(Xs, jnp.float32), ys, 1e-6), jp.AGM())
    jp.solve(jp.BiasSVM(Xs, ys, 1e-12), jp.AGM(max_steps=10), warn=False)  # above the float64 floor (6e-14)


def test_agm_plain_svm_strength():
    """AGM takes ERM(hinge, SquaredL2) through the same dual: lam below the floor is refused
    before tracing; lam = 0 is refused by the ERM itself (a non-smooth loss with no penalty and no
    constraint has no reachable certificate), for every loss that is not smooth."""
    with pytest.raises(ValueError, match="below what the SVM dual can resolve"):
        jp.solve(_erm(X0, Y0, 1e-17), jp.AGM())
    with pytest.raises(ValueError, match="needs a penalty of positive strength"):
        _erm(X0, Y0, 0.0)
    for loss in (jp.losses.Hinge(), jp.losses.Absolute()):
        with pytest.raises(ValueError, match="needs a penalty of positive strength or a constraint"):
            jp.ERM(X0, Y0, loss)
    # a constraint makes it well posed
    jp.ERM(X0, Y0, jp.losses.Hinge(), constraint=jp.constraints.L1Ball(1.0))


def test_bias_svm_all_zero_data():
    """The AGM's dual has no step on all-zero data (refused); on the primal the solution is w = 0
    with the best constant bias, whose risk is 2 min(#pos, #neg) / n."""
    problem = jp.BiasSVM(np.zeros((6, 2)), Y0[:6], 0.1)
    with pytest.raises(ValueError, match="no non-zero entry"):
        jp.solve(problem, jp.AGM())
    sol = jp.solve(problem, jp.BiasSVMNewton())
    y = np.asarray(Y0[:6])
    assert sol.converged and np.all(np.asarray(sol.params) == 0)
    assert abs(float(sol.primal_value) - 2 * min(np.sum(y > 0), np.sum(y < 0)) / 6) <= 1e-9


def test_negative_hyperparameters():
    with pytest.raises(ValueError, match="mu must be non-negative"):
        jp.BiasSVM(X0, Y0, 0.1, mu=-1.0)
    with pytest.raises(ValueError, match="mu must be > 0"):
        jp.F1SVM(X0, Y0, 0.1, mu=0.0)
    with pytest.raises(ValueError, match="capped simplex is empty"):
        jp.ERLPBoost(np.ones((3, 8)), 0.1, nu=-0.5)
    with pytest.raises(ValueError, match="capped simplex is empty"):
        jp.ERLPBoost(np.ones((3, 8)), 0.1, nu=np.nan)
    with pytest.raises(ValueError, match="must be finite"):
        jp.ERM(X0, Y0, losses.Logistic(), penalties.SquaredL2(np.nan))


def test_f1_needs_a_positive():
    with pytest.raises(ValueError, match="at least one positive"):
        jp.F1SVM(X0, -np.ones(8), 0.1, mu=0.1)


def test_sdca_at_zero_strength():
    prob = jp.ERM(X0, Y0, losses.Logistic(), penalties.SquaredL2(0.0))
    with pytest.raises(ValueError, match="lam > 0"):
        jp.solve(prob, jp.SDCA())


# ------------------------------------------------------------------ float32 data under x64
X32 = jnp.asarray(RNG.standard_normal((30, 4)), jnp.float32)
Y32 = jnp.asarray(np.where(RNG.standard_normal(30) > 0, 1.0, -1.0), jnp.float32)


@pytest.mark.parametrize("case", ["fista-erm", "sdca-erm", "agm-biassvm", "agm-erm-hinge"])
def test_float32_solves(case):
    if case == "fista-erm":
        prob, solver = jp.ERM(X32, Y32, losses.Logistic(), penalties.L1(0.01)), jp.FISTA(tol=1e-3)
    elif case == "sdca-erm":
        prob, solver = jp.ERM(X32, Y32, losses.Logistic(), penalties.SquaredL2(0.1)), jp.SDCA(tol=1e-3)
    elif case == "agm-biassvm":
        prob, solver = jp.BiasSVM(X32, Y32, 0.1, polish=False), jp.AGM(tol=1e-3)
    else:
        prob, solver = jp.ERM(X32, Y32, losses.Hinge(), penalties.SquaredL2(0.1)), jp.AGM(tol=1e-3)
    sol = jp.solve(prob, solver)
    # the solution keeps the data's dtype; the certificate is float32, or float64 when x64 is on
    # (the precision policy, docs/precision.md)
    assert sol.params.dtype == jnp.float32
    assert sol.primal_value.dtype in (jnp.float32, jnp.result_type(float))
    assert np.isfinite(float(sol.primal_value)) and np.isfinite(float(sol.gap))
    # converged to the float32 tolerance asked for, with an honest (non-negative up to rounding) gap
    assert sol.converged and -1e-5 <= float(sol.gap) <= 1e-3 * abs(float(sol.primal_value))


def test_float32_with_lam_keeps_dtype():
    prob = jp.ERM(X32, Y32, losses.Logistic(), penalties.SquaredL2(0.1)).with_lam(0.2)
    assert prob.penalty.lam.dtype == jnp.float32
    assert jp.BiasSVM(X32, Y32, 0.1).with_lam(0.2).lam.dtype == jnp.float32


@pytest.mark.parametrize("make", [lambda X, y: jp.ERM(X, y, jp.losses.Logistic(), jp.penalties.L1(1e-2)),
                                  lambda X, y: jp.DRSVM(X, y),
                                  lambda X, y: jp.BiasSVM(X, y, 0.1)], ids=["ERM", "DRSVM", "BiasSVM"])
def test_half_precision_data_are_computed_in_float32(make):
    """float16 data (which jaxlib's kernels reject) are cast to float32 by every problem class, and
    the float32 solve matches the float64 solve of the same (rounded) data to float32 accuracy."""
    X, y = jp.datasets.load("heart_scale")
    X16 = X.astype(np.float16)
    P16 = make(X16, y)
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree_util.tree_leaves(P16)
               if hasattr(leaf, "dtype") and jnp.issubdtype(leaf.dtype, jnp.floating))
    P64 = make(X16.astype(np.float64), y)
    v16, v64 = float(jp.solve(P16, warn=False).primal_value), float(jp.solve(P64).primal_value)
    assert abs(v16 - v64) <= 1e-4 * abs(v64)


@pytest.mark.parametrize("convert", [lambda a: a.tolist(), "frame"], ids=["list", "DataFrame"])
def test_drsvm_accepts_lists_and_data_frames(convert):
    X, y = jp.datasets.load("heart_scale")
    if convert == "frame":
        pd = pytest.importorskip("pandas")
        Xc, yc = pd.DataFrame(X), pd.Series(y)
    else:
        Xc, yc = convert(X), convert(y)
    ref = jp.solve(jp.DRSVM(X, y))
    sol = jp.solve(jp.DRSVM(Xc, yc))
    assert abs(float(sol.primal_value) - float(ref.primal_value)) <= 1e-12 * abs(float(ref.primal_value))


def test_two_class_labels_other_than_pm1_name_the_mapping():
    X, y = jp.datasets.load("heart_scale")
    y01 = (y > 0).astype(float)
    with pytest.raises(ValueError, match="map_binary_labels"):
        jp.ERM(X, y01, jp.losses.Logistic(), jp.penalties.L1(1e-2))
    P = jp.ERM(X, jp.datasets.map_binary_labels(y01), jp.losses.Logistic(), jp.penalties.L1(1e-2))
    np.testing.assert_array_equal(np.asarray(P.y), y)
