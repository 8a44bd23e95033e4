"""SessionOptions fields of the adaptive runtime: mode, pinned_tier, verify, ... (types checked),
and pinned tiers 1-3 giving tier 0's outputs on the demo model."""
import numpy as np
import pytest

import tierjit


def test_new_fields_have_defaults_and_types():
    o = tierjit.SessionOptions()
    assert o.mode == "adaptive"
    assert o.pinned_tier == 2
    assert o.verify is False and o.synchronous_compilation is False
    assert o.theta0 == 2.0 and o.gamma == 10.0 and o.theta_spec == pytest.approx(0.1)
    assert o.version_cap == 8 and o.max_plans == 64 and o.code_cache_bytes == 256 << 20
    o.mode = "pinned-tier"
    o.verify = True
    o.theta0 = 3
    assert o.mode == "pinned-tier" and o.verify is True and o.theta0 == 3.0
    with pytest.raises(ValueError):
        o.mode = "fast"
    with pytest.raises(TypeError):
        o.verify = 1
    with pytest.raises(TypeError):
        o.pinned_tier = 1.5
    assert "mode=" in repr(o)


def test_policy_fields_and_wait_for_compiles(demo_model):
    o = tierjit.SessionOptions()
    assert o.benefit_horizon_windows == 1.0 and o.lindy_horizon is True
    assert o.demotion_epsilon == pytest.approx(0.3) and o.demotion_cold_calls == 256
    assert o.slower_margin == pytest.approx(0.1)
    o.lindy_horizon = False
    o.demotion_cold_calls = 0
    with pytest.raises(TypeError):
        o.lindy_horizon = "yes"
    s = tierjit.InferenceSession(demo_model, sess_options=o)
    x = np.ones((4, 64), dtype=np.float32)
    s.run(None, {s.get_inputs()[0].name: x})
    assert s.wait_for_compiles(10000) is True


def test_warm_up_field_same_outputs(demo_model):
    o = tierjit.SessionOptions()
    assert o.warm_up is True
    with pytest.raises(TypeError):
        o.warm_up = "no"
    x = np.linspace(-1, 1, 3 * 64, dtype=np.float32).reshape(3, 64)
    outs = []
    for warm in (True, False):
        o.warm_up = warm
        s = tierjit.InferenceSession(demo_model, sess_options=o)
        outs.append(s.run(None, {s.get_inputs()[0].name: x})[0])
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("tier", [1, 2, 3])
def test_pinned_tiers_match_interpret_only(demo_model, tier):
    x = np.random.default_rng(tier).standard_normal((5, 64)).astype(np.float32)
    ref = tierjit.InferenceSession(demo_model, tierjit.SessionOptions(mode="interpret-only"))
    s = tierjit.InferenceSession(demo_model,
                                 tierjit.SessionOptions(mode="pinned-tier", pinned_tier=tier))
    want = ref.run(None, {"x": x})[0]
    for _ in range(2):  # first call builds the plan and compiles; the second reuses it
        got = s.run(None, {"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
