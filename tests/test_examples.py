"""examples/tune_lambda.py and examples/tune_epsilon.py: gradient steps on log(lambda) / log(epsilon)
through the implicit derivative of a Pdprox / DRSVM solve lower the validation loss."""
import importlib.util
import sys
from pathlib import Path


def _load(name):
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent.parent / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _steps(out):
    lines = [line for line in out.splitlines() if line.startswith("step")]
    return [float(line.split("V = ")[1].split()[0]) for line in lines], [float(line.split("= ")[-1]) for line in lines]


def test_gradient_tuning_lowers_validation_loss(capsys):
    v_final = _load("tune_lambda").main(["--data", "heart_scale", "--steps", "4"]).loss
    values, _ = _steps(capsys.readouterr().out)
    assert len(values) == 4 and values[-1] < values[0]
    assert v_final < values[0]


def test_gradient_tuning_of_the_wasserstein_radius(capsys):
    args = ["--data", "heart_scale", "--steps", "3", "--n-train", "0", "--grid", "4"]
    v_final = _load("tune_epsilon").main(args).loss
    values, grads = _steps(capsys.readouterr().out)
    assert len(values) == 3 and abs(grads[0]) > 1e-6
    assert v_final < values[0]
