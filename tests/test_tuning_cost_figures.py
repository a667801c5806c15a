"""fedtheory.figures.tuning_cost: legends show η/μ while setting keys stay ASCII."""
import matplotlib.pyplot as plt

from fedtheory.figures import tuning_cost as F


def test_pretty_label_and_widget_legend_use_greek_letters_but_keys_stay_ascii():
    assert F.pretty_label("Tuned, TNB eta=-0.5") == "Tuned, TNB η=-0.5"
    assert F.pretty_label("Tuned, Poisson mu=10") == "Tuned, Poisson μ=10"
    assert F.pretty_label("Private (untuned)") == "Private (untuned)"
    settings = F.curves(0.08, etas=(0.0,))
    assert [s.label for s in settings][2:] == ["Tuned, TNB eta=0", "Tuned, Poisson mu=10"]
    fig = F.plot_widget(tau=0.08, eps=0.25, mean_runs=10.0, eta=0.0)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "Tuned, TNB η=0" in legend and "Tuned, Poisson μ=10" in legend and not any("eta" in t for t in legend)
    plt.close(fig)
