import json

import numpy as np
import pytest
import torch

from router.model import MoGRouter, RouterConfig, RouterError, check_compatible, load_router
from router.train import TrainConfig, plot_history, train_router


def make(dim=16, levels=("theta", "theta/2", "theta/4"), **kw):
    torch.manual_seed(0)
    return MoGRouter(RouterConfig(encoder="hashing", dim=dim, levels=levels, **kw))


def test_weights_shape_and_range():
    r = make()
    x = np.random.default_rng(0).normal(size=(5, 16)).astype(np.float32) * 50  # large inputs saturate the sigmoid
    w = r.weights(x)
    assert w.shape == (5, 3)
    assert np.all(w >= 0) and np.all(w <= 1)
    one = r.weights(x[0])
    assert one.shape == (3,)
    np.testing.assert_allclose(one, w[0], rtol=1e-4)


def test_wrong_vector_size_is_refused():
    with pytest.raises(RouterError, match="expects 16-dimensional query vectors"):
        make().weights(np.zeros(8))


def test_save_load_round_trip(tmp_path):
    r = make(hidden=(32, 8), meta={"theta": 300})
    r.save(tmp_path / "r")
    assert {p.name for p in (tmp_path / "r").iterdir()} == {"config.json", "model.safetensors"}
    back = MoGRouter.load(tmp_path / "r")
    assert back.config == r.config and back.config.meta == {"theta": 300}
    for (k, a), (k2, b) in zip(r.state_dict().items(), back.state_dict().items()):
        assert k == k2 and torch.allclose(a, b)
    x = np.random.default_rng(1).normal(size=(4, 16)).astype(np.float32)
    np.testing.assert_allclose(back.weights(x), r.weights(x), rtol=1e-6)


@pytest.mark.parametrize("bad, match", [
    (dict(dim=0), "dim must be >= 1"),
    (dict(levels=()), "at least one granularity level"),
    (dict(encoder_kind="bert"), "encoder_kind must be one of"),
    (dict(dropout=1.0), "dropout must be in"),
    (dict(encoder=""), "must name the query encoder"),
])
def test_config_validation(bad, match):
    kw = dict(encoder="hashing", dim=4) | bad
    with pytest.raises(RouterError, match=match):
        RouterConfig(**kw)


def test_missing_and_malformed_folders(tmp_path):
    with pytest.raises(RouterError, match="expected config.json and model.safetensors"):
        MoGRouter.load(tmp_path)
    make().save(tmp_path / "r")
    (tmp_path / "r" / "config.json").write_text("{not json")
    with pytest.raises(RouterError, match="is not a valid router config"):
        MoGRouter.load(tmp_path / "r")
    make(dim=16).save(tmp_path / "s")
    cfg = json.loads((tmp_path / "s" / "config.json").read_text())
    (tmp_path / "s" / "config.json").write_text(json.dumps(cfg | {"dim": 8}))
    with pytest.raises(RouterError, match="does not match"):
        MoGRouter.load(tmp_path / "s")


def test_router_for_another_encoder_or_level_set_is_refused(tmp_path):
    make().save(tmp_path / "r")
    assert load_router(tmp_path / "r", embedder="hashing", n_levels=3).config.n_levels == 3
    with pytest.raises(RouterError, match=r"trained on 'hashing' query embeddings but the index uses the embedder "
                                          r"'all-MiniLM-L6-v2'.*mgrag train-router"):
        load_router(tmp_path / "r", embedder="all-MiniLM-L6-v2", n_levels=3)
    with pytest.raises(RouterError, match="trained for 3 granularity levels .* the index has 1"):
        load_router(tmp_path / "r", embedder="hashing", n_levels=1)
    # a RoBERTa router reads its own encoder: any index embedder is fine, the level set is not
    cfg = RouterConfig(encoder="roberta-base", dim=768, encoder_kind="roberta")
    check_compatible(cfg, embedder="all-MiniLM-L6-v2", n_levels=3)


def toy_data(n=200, dim=16, seed=0):
    """Queries whose best level is a linear function of the vector: learnable, like a real router's task."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    proj = rng.normal(size=(dim, 3))
    order = np.argsort(-(x @ proj), axis=1)
    y = np.zeros((n, 3), np.float32)
    y[np.arange(n), order[:, 0]] = 0.8
    y[np.arange(n), order[:, 1]] = 0.2
    return x, y


def test_training_lowers_the_loss_and_is_seeded(tmp_path):
    x, y = toy_data()
    xv, yv = toy_data(60, seed=1)
    cfg = RouterConfig(encoder="hashing", dim=16, hidden=(32,), dropout=0.0)
    tc = TrainConfig(max_epochs=40, patience=40, seed=3)
    model, hist = train_router(cfg, x, y, xv, yv, train_config=tc)
    assert hist.train[-1] < hist.train[0] * 0.9
    assert hist.best_val < hist.val[0]
    # the kept model is the best epoch's
    from router.train import bce_loss
    assert bce_loss(model, torch.tensor(xv), torch.tensor(yv)) == pytest.approx(hist.best_val, rel=1e-5)
    model2, hist2 = train_router(cfg, x, y, xv, yv, train_config=tc)
    assert hist2.train == hist.train
    png = plot_history(hist, tmp_path / "loss.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_early_stopping_stops():
    x, y = toy_data(40)
    rng = np.random.default_rng(5)
    yv = rng.permutation(y)  # validation labels unrelated to the inputs: the val loss soon stops improving
    _, hist = train_router(RouterConfig(encoder="h", dim=16), x, y, x[:20] + 3, yv[:20],
                           train_config=TrainConfig(max_epochs=500, patience=5))
    assert hist.stopped_early and len(hist.train) < 500


def test_training_input_validation():
    cfg = RouterConfig(encoder="h", dim=16)
    x, y = toy_data(10)
    with pytest.raises(ValueError, match=r"router inputs must have shape \(n, 16\)"):
        train_router(cfg, x[:, :8], y)
    with pytest.raises(ValueError, match="labels must have shape"):
        train_router(cfg, x, y[:, :2])
    with pytest.raises(ValueError, match="lr must be > 0"):
        TrainConfig(lr=0)


def test_prior_bce_is_the_loss_of_the_mean_label():
    from router.pipeline import prior_bce

    y = np.array([[0.8, 0.2, 0.0], [0.0, 0.2, 0.8]], np.float32)
    p = np.clip(y.mean(0), 1e-6, 1 - 1e-6)
    expected = -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean()
    assert prior_bce(y, y) == pytest.approx(expected, rel=1e-5)
    assert prior_bce(y, y[:0]) is None


def test_choice_router_picks_a_candidate_and_keeps_uniform_within_the_margin(tmp_path):
    cands = ((1.0, 1.0, 1.0), (1.0, 0.9, 0.9), (0.0, 0.0, 1.0))
    r = make(inputs=("profile",), head="choice", candidates=cands, hidden=(8,))
    with torch.no_grad():  # always prefers the third candidate, by a wide margin
        r.net[-1].weight.zero_()
        r.net[-1].bias.copy_(torch.tensor([0.0, -1.0, 3.0]))
    prof = np.zeros((2, r.config.profile_dim), np.float32)
    np.testing.assert_allclose(r.weights(None, prof), [cands[2]] * 2)
    np.testing.assert_allclose(r.weights(None, prof[0]), cands[2])
    cautious = make(inputs=("profile",), head="choice", candidates=cands, hidden=(8,), default_margin=0.99)
    cautious.load_state_dict(r.state_dict())
    np.testing.assert_allclose(cautious.weights(None, prof[0]), cands[0])  # not sure enough: uniform
    r.save(tmp_path / "c")
    back = MoGRouter.load(tmp_path / "c")
    assert back.config == r.config and back.config.candidates == cands
    np.testing.assert_allclose(back.weights(None, prof), r.weights(None, prof))


def test_profile_inputs_are_standardised_and_checked():
    from router.features import profile_dim
    from router.model import router_inputs

    n = profile_dim(3)
    cfg = RouterConfig(encoder="hashing", dim=4, inputs=("query", "profile"), profile_mean=(1.0,) * n,
                       profile_std=(2.0,) * n)
    x = router_inputs(cfg, np.ones((1, 4)), np.full((1, n), 5.0))
    assert x.shape == (1, 4 + n) and np.allclose(x[0, 4:], 2.0)
    with pytest.raises(RouterError, match="pass the hits"):
        router_inputs(cfg, np.ones((1, 4)), None)
    with pytest.raises(RouterError, match=f"expects {n} profile features"):
        router_inputs(cfg, np.ones((1, 4)), np.ones((1, 3)))


@pytest.mark.parametrize("bad, match", [
    (dict(inputs=("query", "bm25")), "inputs must be a non-empty subset"),
    (dict(head="softmax"), "head must be one of"),
    (dict(head="choice"), "a choice router needs candidates"),
    (dict(head="choice", candidates=((1.0, 1.0),)), "a choice router needs candidates"),
])
def test_router_kinds_validated(bad, match):
    with pytest.raises(RouterError, match=match):
        RouterConfig(encoder="hashing", dim=4, **bad)


def test_choice_router_learns_which_weighting_a_profile_calls_for():
    """A toy task: the finest level's top score decides whether 'θ/4 alone' or 'uniform' retrieves best."""
    from router.model import router_inputs

    rng = np.random.default_rng(0)
    cands = ((1.0, 1.0, 1.0), (0.0, 0.0, 1.0))
    cfg = RouterConfig(encoder="hashing", dim=4, inputs=("profile",), head="choice", candidates=cands, hidden=(16,))
    prof = rng.normal(size=(400, cfg.profile_dim)).astype(np.float32)
    y = np.zeros((400, 2), np.float32)
    y[np.arange(400), (prof[:, 10] > 0).astype(int)] = 1.0  # feature 10 = the θ/4 level's top score
    x = router_inputs(cfg, None, prof)
    model, hist = train_router(cfg, x[:300], y[:300], x[300:], y[300:], train_config=TrainConfig(seed=0))
    picked = model.weights(None, prof[300:])
    right = np.all(picked == np.asarray(cands, np.float32)[(prof[300:, 10] > 0).astype(int)], axis=1)
    assert right.mean() > 0.9 and hist.best_val < hist.val[0]
