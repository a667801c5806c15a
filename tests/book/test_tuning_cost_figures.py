"""fedtheory.figures.tuning_cost: legends show ν/μ while setting keys stay ASCII."""
import matplotlib.pyplot as plt

from fedtheory.figures import tuning_cost as F


def test_pretty_label_and_widget_legend_use_greek_letters_but_keys_stay_ascii():
    assert F.pretty_label("Tuned, TNB eta=-0.5") == "Tuned, TNB ν=-0.5"
    assert F.pretty_label("Tuned, Poisson mu=10") == "Tuned, Poisson μ=10"
    assert F.pretty_label("Private (untuned)") == "Private (untuned)"
    settings = F.curves(0.08, etas=(0.0,))
    assert [s.label for s in settings][2:] == ["Tuned, TNB eta=0", "Tuned, Poisson mu=10"]
    fig = F.plot_widget(tau=0.08, eps=0.25, mean_runs=10.0, eta=0.0)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "Tuned, TNB ν=0" in legend and "Tuned, Poisson μ=10" in legend and not any("eta" in t for t in legend)
    plt.close(fig)


def test_fig7_tight_panel_b_reading_and_plugin():
    """Panel (b), tight calibration: Poisson-tuned best lies between the exact-calibrated untuned endpoints, but below
    both when the baseline keeps the paper's RDP calibration; the free plug-in λ̂ beats every tuned curve."""
    settings = F.curves(0.08, etas=(-0.5, 0.0))
    z = {s.label: s.z for s in settings}
    assert abs(z["Private (untuned)"] - 13.286) < 2e-3 and abs(z["Tuned, Poisson mu=10"] - 27.45) < 0.05
    s_tight = F.summary(settings)
    s_rdp = F.summary(settings, untuned=F.curves(0.08, etas=(), poisson=False, bound="rdp")[1])
    poisson = s_tight["tuned_best"]["Tuned, Poisson mu=10"]
    assert s_tight["local"] < poisson < s_tight["fedavg"]
    assert s_rdp["tuned_beats_endpoints"]["Tuned, Poisson mu=10"]
    p = F.plugin(settings, 0.08, trials=4000, seed=3)
    assert abs(p.mc - p.exact) <= 4 * p.se
    assert p.exact < min(s_tight["tuned_best"].values()) and p.exact < 1.1 * s_tight["mrmtl_untuned_best"]
