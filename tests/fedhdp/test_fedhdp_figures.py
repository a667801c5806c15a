"""The FedHDP chapter's plotting functions return labelled figures."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from fedtheory import linear_regression as lr  # noqa: E402
from fedtheory.figures import fedhdp  # noqa: E402


@pytest.mark.parametrize("fn", [fedhdp.plot_server_error, fedhdp.plot_opt_out, fedhdp.plot_lambdas_vs_gamma])
def test_figures_have_labels(fn):
    fig = fn()
    for ax in fig.axes:
        assert ax.get_title()
        assert ax.get_legend() is not None or fig.legends  # per-panel legend, or one figure legend
    assert fig.axes[-1].get_xlabel()  # stacked panels share the x axis: the label is on the bottom one
    assert fig.axes[0].get_ylabel()
    plt.close(fig)


def test_server_error_marker_is_the_curve_minimum():
    fig = fedhdp.plot_server_error(N=30, rho_np=0.2, alpha2=1.0, tau2=0.3, gamma2=1.0)
    ax = fig.axes[0]
    curve, marker = ax.lines[0], ax.lines[1]
    assert marker.get_ydata()[0] <= np.min(curve.get_ydata()) + 1e-12
    assert marker.get_xdata()[0] == pytest.approx(lr.optimal_ratio(6, 24, 1.0, 0.3, 0.0, 1.0))
    plt.close(fig)


def test_opt_out_figure_shows_fedhdp_beating_uniform():
    fig = fedhdp.plot_opt_out()
    uniform, fedhdp_ax = fig.axes  # stacked: HDP-FedAvg+Ditto on top, FedHDP below
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)  # one legend
    assert min(l.get_ydata().min() for l in fedhdp_ax.lines) < min(l.get_ydata().min() for l in uniform.lines)
    plt.close(fig)


def test_split_and_widget_edge_values():
    assert fedhdp.split(10, 0.1) == (1, 9)
    assert fedhdp.split(10, 1.0) == (9, 1)
    with pytest.raises(ValueError, match="rho_np"):
        fedhdp.split(10, 1.5)
    plt.close(fedhdp.plot_server_error(N=5, rho_np=0.0))
    plt.close(fedhdp.plot_opt_out(N=4, rho_np=0.0))
    plt.close(fedhdp.plot_lambdas_vs_gamma(N=4, rho_np=0.0))
