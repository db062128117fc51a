"""examples/tune_lambda.py: gradient steps on log(lambda) through the implicit derivative of a
Pdprox solve lower the validation loss."""
import importlib.util
import sys
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "tune_lambda", Path(__file__).resolve().parent.parent / "examples" / "tune_lambda.py")
tune = importlib.util.module_from_spec(spec)
sys.modules["tune_lambda"] = tune
spec.loader.exec_module(tune)


def test_gradient_tuning_lowers_validation_loss(capsys):
    lam, v_final, v_grid_best = tune.main(["--data", "heart_scale", "--steps", "4"])
    out = capsys.readouterr().out
    values = [float(line.split("V = ")[1].split()[0]) for line in out.splitlines() if line.startswith("step")]
    assert len(values) == 4 and values[-1] < values[0]
    assert v_final < values[0]
