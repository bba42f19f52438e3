"""Growing a network into a deeper and wider one that computes the same function (training.resnet.grow)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the training extra (torch) is not installed")

from training.configs import TrainConfig  # noqa: E402
from training.resnet.grow import grow  # noqa: E402
from training.resnet.model import PolicyValueNet  # noqa: E402
from training.resnet.train import train  # noqa: E402
from training.resnet.weights import WeightsError, load_file, load_network  # noqa: E402


def trained_looking(blocks: int, filters: int, squeeze: int = 0) -> PolicyValueNet:
    """A small network whose batch norms (and SE units) are not at their defaults, as after training."""
    torch.manual_seed(3)
    model = PolicyValueNet(18, blocks, filters, 16, squeeze)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-1, 1)
            module.running_var.uniform_(0.5, 2)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)
    return model.eval()


@pytest.mark.parametrize("blocks, filters", [(2, 8), (4, 8), (2, 16), (5, 24)])
def test_the_grown_network_computes_the_same_function(blocks, filters):
    small = trained_looking(2, 8)
    big = grow(small, blocks, filters)
    assert big.shape == {"planes": 18, "blocks": blocks, "filters": filters, "value_hidden": 16}
    inputs = torch.randint(0, 2, (6, 18, 8, 8)).float()
    for mode in ("eval", "train"):  # batch statistics too: the new channels stay at zero either way
        getattr(small, mode)(), getattr(big, mode)()
        for a, b in zip(small(inputs), big(inputs)):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    # and it can learn: the new blocks' zero scales get gradients
    big.train()
    policy, value = big(inputs)
    (policy.logsumexp(1).sum() + value.sum()).backward()
    assert big.tower[-1].bn2.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("start, blocks, filters", [((2, 8, 0), 2, 8), ((2, 8, 0), 3, 16), ((2, 8, 4), 4, 8)])
def test_se_units_start_as_identities(start, blocks, filters):
    small = trained_looking(*start)
    big = grow(small, blocks, filters, squeeze=4)
    assert big.shape["squeeze"] == 4 and all(block.se is not None for block in big.tower)
    inputs = torch.randint(0, 2, (6, 18, 8, 8)).float()
    for a, b in zip(small(inputs), big.eval()(inputs)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    big.train()
    policy, value = big(inputs)
    (policy.logsumexp(1).sum() + value.sum()).backward()
    assert big.tower[0].se.expand.weight.grad.abs().sum() > 0  # and they learn
    with pytest.raises(ValueError, match="grows deeper only"):
        grow(trained_looking(2, 8, 4), 2, 16, squeeze=4)


def test_a_network_is_not_grown_into_a_smaller_one():
    with pytest.raises(ValueError, match="cannot grow a 2x8 network into a smaller 1x8"):
        grow(trained_looking(2, 8), 1, 8)


def test_train_grows_its_init_network_when_asked(tiny_network, tmp_path):
    checkpoint, weights, _, _ = tiny_network
    data = str(load_file(checkpoint)["config"]["data"][0])
    config = TrainConfig(data=[data], out=str(tmp_path / "grown"), blocks=2, filters=16, epochs=1, batch_size=64,
                         max_samples=64, lr=0.0, device="cpu", validation=0.5, init=str(weights), grow=True)
    grown, _ = load_network(train(config, progress=False))
    start, _ = load_network(weights)
    # lr 0: the weights are the start's, embedded (only the batch norms' running statistics moved)
    assert grown.shape["blocks"] == 2 and grown.shape["filters"] == 16
    assert torch.equal(grown.stem[0].weight[:8], start.stem[0].weight)
    assert torch.equal(grown.tower[0].conv1.weight[:8, :8], start.tower[0].conv1.weight)
    assert not grown.tower[0].conv1.weight[:8, 8:].any() and not grown.tower[1].bn2.weight.any()
    assert torch.equal(grown.policy[3].weight[:, :8], start.policy[3].weight)
    with pytest.raises(WeightsError, match="cannot grow a 1x8 network into a smaller"):
        train(TrainConfig(data=[data], out=str(tmp_path / "smaller"), blocks=1, filters=4, epochs=1,
                          device="cpu", init=str(weights), grow=True), progress=False)


def test_an_se_network_trains_exports_and_plays_as_its_pt(tiny_network, tmp_path, driver):
    from evaluators.resnet import ResNetEvaluator
    from tests.exported import assert_engine_plays_resnet
    from training.resnet.export import export_resnet
    from training.resnet.onnx_import import import_onnx
    checkpoint, weights, _, _ = tiny_network
    data = str(load_file(checkpoint)["config"]["data"][0])
    config = TrainConfig(data=[data], out=str(tmp_path / "se"), blocks=1, filters=8, epochs=1, batch_size=32,
                         max_samples=96, device="cpu", validation=0.3, init=str(weights), grow=True, squeeze=2)
    model, state = load_network(train(config, progress=False))
    assert state["shape"]["squeeze"] == 2 and model.tower[0].se.expand.weight.abs().sum() > 0  # trained
    path = export_resnet(tmp_path / "se" / "checkpoint.pt", tmp_path / "se.onnx")
    inputs = np.random.default_rng(2).integers(0, 2, (5, 18, 8, 8)).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(inputs))
    policy, wdl = ResNetEvaluator(path).run(inputs)
    np.testing.assert_allclose(policy, expected[0].numpy(), atol=1e-4)
    np.testing.assert_allclose(wdl, torch.softmax(expected[1], 1).numpy(), atol=1e-5)
    assert_engine_plays_resnet(driver, path, tmp_path / "se" / "checkpoint.pt")  # loaded by the engine, and the same
    with pytest.raises(WeightsError, match="not the requested 1x8 network with 18 input planes$"):
        load_network(tmp_path / "se" / "checkpoint.pt", expect={"blocks": 1, "squeeze": 0})
    with pytest.raises(ValueError, match="SE units is not rebuilt from its ONNX graph"):
        import_onnx(path, [])


def test_a_network_grows_into_an_encoding_that_extends_its_own():
    """planes18 -> features36: the new planes' weights at zero, the fifty-move plane's moved last: the grown network
    computes on a position's features36 planes what the small one computes on its planes18 planes."""
    import chess
    from evaluators.encoding import get_encoding
    small = PolicyValueNet(18, 2, 16).eval()
    big = grow(small, 2, 16, encoding="features36", small_encoding="planes18").eval()
    boards = [chess.Board(), chess.Board("r3k2r/pp3ppp/8/3Pp3/8/8/PPP2PPP/R3K2R w KQkq e6 0 12")]
    boards[0].push_san("e4")
    old = torch.from_numpy(np.stack([get_encoding("planes18").encode(b) for b in boards]))
    new = torch.from_numpy(np.stack([get_encoding("features36").encode(b) for b in boards]))
    with torch.no_grad():
        for mine, theirs in zip(big(new), small(old)):
            torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="extends"):
        grow(small, 2, 16, encoding="lc0-112", small_encoding="planes18")
