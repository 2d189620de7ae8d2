import json

import numpy as np
import pytest
import torch

from munet.models import (
    AssembledVit,
    CheckpointError,
    VitArch,
    build_model,
    copy_components,
    load_checkpoint,
    read_checkpoint,
    resize_posembed,
    save_npz,
    save_safetensors,
)
from tests.models.conftest import TINY, TINY_IMAGE, random_components, random_images

NPZ_LAYOUTS = [
    pytest.param({}, id="augreg"),
    pytest.param({"prefix": "opt/target/"}, id="opt-target"),
    pytest.param({"prefix": "params/"}, id="params"),
    pytest.param({"prefix": "params/img/"}, id="params-img"),
    pytest.param({"prefix": "params/", "big_vision_names": True}, id="big_vision-names"),
    pytest.param({"scanned": True}, id="scanned"),
    pytest.param({"prefix": "params/", "big_vision_names": True, "scanned": True}, id="bv-scan"),
]


def _logits(components, image_size=TINY_IMAGE, arch=TINY):
    return AssembledVit(arch, image_size, components)(random_images(3, image_size))


@pytest.mark.parametrize("layout", NPZ_LAYOUTS)
def test_npz_round_trip_gives_identical_logits(tmp_path, tiny_components, layout):
    path = tmp_path / "ckpt.npz"
    save_npz(path, tiny_components, TINY, **layout)
    loaded = load_checkpoint(path, TINY, TINY_IMAGE)
    assert torch.equal(_logits(loaded), _logits(tiny_components))
    for component, tensors in tiny_components.items():
        for name, tensor in tensors.items():
            assert torch.equal(loaded[component][name], tensor), f"{component}.{name}"


def test_npz_keys_follow_the_augreg_reference(tmp_path, tiny_components):
    path = tmp_path / "ckpt.npz"
    save_npz(path, tiny_components, TINY)
    with np.load(path, allow_pickle=False) as npz:
        shapes = {key: npz[key].shape for key in npz.files}
    block = "Transformer/encoderblock_1/"
    assert shapes["embedding/kernel"] == (4, 4, 3, 16)
    assert shapes["cls"] == (1, 1, 16)
    assert shapes["Transformer/posembed_input/pos_embedding"] == (1, 17, 16)
    assert shapes[block + "MultiHeadDotProductAttention_1/query/kernel"] == (16, 2, 8)
    assert shapes[block + "MultiHeadDotProductAttention_1/value/bias"] == (2, 8)
    assert shapes[block + "MultiHeadDotProductAttention_1/out/kernel"] == (2, 8, 16)
    assert shapes[block + "MlpBlock_3/Dense_0/kernel"] == (16, 32)
    assert shapes[block + "LayerNorm_2/scale"] == (16,)
    assert shapes["head/kernel"] == (16, 5)


def test_big_vision_patch_only_posembed_loads_with_a_zero_cls_row(tmp_path, tiny_components):
    components = copy_components(tiny_components)
    posembed = components["posembed_input"]["pos_embedding"]
    posembed[:, 0] = 0.0  # what big_vision computes: cls gets no position embedding
    path = tmp_path / "bv.npz"
    save_npz(path, components, TINY, prefix="params/", big_vision_names=True)
    with np.load(path, allow_pickle=False) as npz:
        arrays = dict(npz)
    del arrays["params/Transformer/posembed_input/pos_embedding"]
    arrays["params/pos_embedding"] = posembed[:, 1:].numpy()
    np.savez(path, **arrays)
    loaded = load_checkpoint(path, TINY, TINY_IMAGE)
    assert torch.equal(_logits(loaded), _logits(components))


def test_older_checkpoints_optimizer_state_is_ignored(tmp_path, tiny_components):
    path = tmp_path / "old.npz"
    save_npz(path, tiny_components, TINY, prefix="opt/target/")
    with np.load(path, allow_pickle=False) as npz:
        arrays = dict(npz)
    arrays["opt/state/step"] = np.array(7)
    np.savez(path, **arrays)
    assert torch.equal(_logits(load_checkpoint(path, TINY, TINY_IMAGE)), _logits(tiny_components))


def test_pre_logits_layer_and_its_head_are_dropped(tmp_path, tiny_components):
    path = tmp_path / "with_pre_logits.npz"
    save_npz(path, tiny_components, TINY)
    with np.load(path, allow_pickle=False) as npz:
        arrays = dict(npz)
    arrays["pre_logits/kernel"] = np.ones((16, 16), np.float32)
    arrays["pre_logits/bias"] = np.zeros(16, np.float32)
    np.savez(path, **arrays)
    loaded = load_checkpoint(path, TINY, TINY_IMAGE)
    assert torch.count_nonzero(loaded["head"]["weight"]) == 0  # not the file's head
    assert torch.equal(loaded["encoder_norm"]["weight"], tiny_components["encoder_norm"]["weight"])


@pytest.mark.parametrize("naming", ["timm", "munet"])
def test_safetensors_round_trip(tmp_path, tiny_components, naming):
    path = tmp_path / "ckpt.safetensors"
    save_safetensors(path, tiny_components, naming=naming)
    loaded = load_checkpoint(path, TINY, TINY_IMAGE)
    assert torch.equal(_logits(loaded), _logits(tiny_components))


@pytest.mark.parametrize("naming", ["timm", "munet"])
@pytest.mark.parametrize("suffix", [".pth", ".bin"])
def test_torch_saved_state_dict_round_trip(tmp_path, tiny_components, naming, suffix):
    from safetensors.torch import load_file

    # The same state dict as the safetensors writer's, torch.save'd (what timm's
    # `torch.save(model.state_dict())` writes).
    save_safetensors(tmp_path / "ckpt.safetensors", tiny_components, naming=naming)
    path = tmp_path / f"ckpt{suffix}"
    torch.save(load_file(str(tmp_path / "ckpt.safetensors")), path)
    raw = read_checkpoint(path, max_layers=1)
    assert raw.layout == f"torch({naming})" and raw.depth == 2
    assert "encoderblock_1.norm1.weight" not in raw.tensors
    loaded = load_checkpoint(path, TINY, TINY_IMAGE)
    assert torch.equal(_logits(loaded), _logits(tiny_components))


def test_timm_state_dict_names(tmp_path, tiny_components):
    from safetensors.torch import load_file

    path = tmp_path / "timm.safetensors"
    save_safetensors(path, tiny_components, naming="timm")
    keys = set(load_file(str(path)))
    assert {"patch_embed.proj.weight", "cls_token", "pos_embed", "norm.bias", "head.weight"} <= keys
    assert {"blocks.1.attn.qkv.weight", "blocks.0.mlp.fc2.bias", "blocks.1.norm2.weight"} <= keys


def test_capped_read_skips_later_blocks(tmp_path, tiny_components):
    path = tmp_path / "ckpt.npz"
    save_npz(path, tiny_components, TINY)
    with np.load(path, allow_pickle=False) as npz:
        arrays = dict(npz)
    # Damage block 1: a read capped to one block never touches it.
    arrays["Transformer/encoderblock_1/LayerNorm_0/scale"] = np.array([{"x": 1}], dtype=object)
    np.savez(path, **arrays)
    raw = read_checkpoint(path, max_layers=1)
    assert raw.depth == 2
    assert not any(name.startswith("encoderblock_1.") for name in raw.tensors)
    with pytest.raises(CheckpointError, match="encoderblock_1/LayerNorm_0/scale"):
        read_checkpoint(path)
    state = tmp_path / "ckpt.safetensors"
    save_safetensors(state, tiny_components, naming="timm")
    raw = read_checkpoint(state, max_layers=1)
    assert raw.depth == 2 and "encoderblock_1.norm1.weight" not in raw.tensors


def test_fewer_layers_than_the_checkpoint(tmp_path, tiny_components):
    path = tmp_path / "ckpt.npz"
    save_npz(path, tiny_components, TINY)
    one_layer = TINY.replace(num_layers=1)
    loaded = load_checkpoint(path, one_layer, TINY_IMAGE)
    assert "encoderblock_1" not in loaded
    truncated = {k: v for k, v in tiny_components.items() if k != "encoderblock_1"}
    assert torch.equal(_logits(loaded, arch=one_layer), _logits(truncated, arch=one_layer))


def test_more_layers_than_the_checkpoint_is_an_error(tmp_path, tiny_components):
    path = tmp_path / "ckpt.npz"
    save_npz(path, tiny_components, TINY)
    with pytest.raises(CheckpointError, match="asks for 3 encoder blocks, the checkpoint has 2"):
        load_checkpoint(path, TINY.replace(num_layers=3), TINY_IMAGE)


def test_head_loaded_only_when_the_class_count_matches(tmp_path, tiny_components):
    path = tmp_path / "ckpt.npz"
    save_npz(path, tiny_components, TINY)
    same = load_checkpoint(path, TINY, TINY_IMAGE)
    assert torch.equal(same["head"]["weight"], tiny_components["head"]["weight"])
    other = load_checkpoint(path, TINY.replace(num_classes=7), TINY_IMAGE)
    assert other["head"]["weight"].shape == (7, 16)
    assert torch.count_nonzero(other["head"]["weight"]) == 0
    assert torch.count_nonzero(other["head"]["bias"]) == 0
    headless = load_checkpoint(path, TINY.replace(num_classes=0), TINY_IMAGE)
    assert "head" not in headless
    for name in ("embedding", "encoderblock_1", "encoder_norm"):
        for tensor_name, tensor in tiny_components[name].items():
            assert torch.equal(other[name][tensor_name], tensor)


def test_posembed_resized_on_load(tmp_path, tiny_components):
    path = tmp_path / "ckpt.npz"
    save_npz(path, tiny_components, TINY)
    loaded = load_checkpoint(path, TINY, 24)  # grid 4 -> 6
    expected = resize_posembed(tiny_components["posembed_input"]["pos_embedding"], 6)
    assert torch.equal(loaded["posembed_input"]["pos_embedding"], expected)
    assert _logits(loaded, image_size=24).shape == (3, 5)


def test_resize_posembed_hand_computed():
    # cls = 9; grid 2x2 [[0, 2], [4, 6]] -> 3x3 with corners kept and linear midpoints.
    posembed = torch.tensor([9.0, 0.0, 2.0, 4.0, 6.0]).reshape(1, 5, 1)
    out = resize_posembed(posembed, 3)
    expected = [9.0, 0.0, 1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0, 6.0]
    assert out.flatten().tolist() == expected
    # Width channels are resized independently; same grid returns the input itself.
    two = torch.cat([posembed, -posembed], dim=2)
    torch.testing.assert_close(resize_posembed(two, 3)[..., 1], -out[..., 0])
    assert resize_posembed(posembed, 2) is posembed


def test_resize_posembed_equals_scipy_order1_zoom():
    # The method of Google's vit_jax.checkpoint.load_pretrained.
    scipy_ndimage = pytest.importorskip("scipy.ndimage")
    generator = torch.Generator().manual_seed(0)
    posembed = torch.randn(1, 1 + 7 * 7, 6, generator=generator, dtype=torch.float64)
    for new_grid in (1, 3, 5, 12):
        grid = posembed[0, 1:].reshape(7, 7, 6).numpy()
        zoom = (new_grid / 7, new_grid / 7, 1)
        expected = scipy_ndimage.zoom(grid, zoom, order=1).reshape(new_grid * new_grid, 6)
        got = resize_posembed(posembed, new_grid)[0, 1:].numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_resize_posembed_errors():
    with pytest.raises(ValueError, match="not a square grid"):
        resize_posembed(torch.zeros(1, 1 + 5, 4), 2)
    with pytest.raises(ValueError, match="shape \\(1, tokens, D\\)"):
        resize_posembed(torch.zeros(5, 4), 2)


def test_missing_key_error_names_the_key(tmp_path, tiny_components):
    path = tmp_path / "ckpt.npz"
    save_npz(path, tiny_components, TINY)
    with np.load(path, allow_pickle=False) as npz:
        arrays = dict(npz)
    del arrays["Transformer/encoderblock_1/MlpBlock_3/Dense_1/bias"]
    np.savez(path, **arrays)
    with pytest.raises(
        CheckpointError, match="missing key 'Transformer/encoderblock_1/MlpBlock_3/Dense_1/bias'"
    ):
        load_checkpoint(path, TINY, TINY_IMAGE)


def test_wrong_shape_error_names_the_key_and_shapes(tmp_path, tiny_components):
    path = tmp_path / "ckpt.npz"
    save_npz(path, tiny_components, TINY)
    wider = TINY.replace(mlp_dim=48)
    with pytest.raises(
        CheckpointError,
        match=r"'Transformer/encoderblock_0/MlpBlock_3/Dense_0/kernel' gives "
        r"encoderblock_0.mlp.fc1.weight of shape \(32, 16\), expected \(48, 16\)",
    ):
        load_checkpoint(path, wider, TINY_IMAGE)
    with pytest.raises(CheckpointError, match="checkpoint has 2 attention heads, arch expects 4"):
        load_checkpoint(path, TINY.replace(num_heads=4), TINY_IMAGE)


def test_unknown_layout_and_unknown_keys_are_errors(tmp_path, tiny_components):
    path = tmp_path / "other.npz"
    np.savez(path, **{"backbone/conv/kernel": np.zeros((3, 3), np.float32)})
    with pytest.raises(CheckpointError, match="unknown checkpoint layout.*backbone/conv/kernel"):
        load_checkpoint(path, TINY, TINY_IMAGE)
    save_npz(path, tiny_components, TINY)
    with np.load(path, allow_pickle=False) as npz:
        arrays = dict(npz)
    arrays["Transformer/encoderblock_0/LayerScale_0/gamma"] = np.ones(16, np.float32)
    np.savez(path, **arrays)
    with pytest.raises(CheckpointError, match="no place for.*LayerScale_0"):
        load_checkpoint(path, TINY, TINY_IMAGE)
    state = tmp_path / "x.safetensors"
    save_safetensors(state, {"foo": {"bar": torch.zeros(2)}})
    with pytest.raises(CheckpointError, match="unknown state-dict layout"):
        load_checkpoint(state, TINY, TINY_IMAGE)
    with pytest.raises(CheckpointError, match="unknown checkpoint extension '.h5'"):
        (tmp_path / "model.h5").write_bytes(b"x")
        load_checkpoint(tmp_path / "model.h5", TINY, TINY_IMAGE)
    with pytest.raises(FileNotFoundError, match="nope.npz"):
        load_checkpoint(tmp_path / "nope.npz", TINY, TINY_IMAGE)


def test_pickled_or_truncated_npz_is_refused(tmp_path, tiny_components):
    good = tmp_path / "good.npz"
    save_npz(good, tiny_components, TINY)
    with np.load(good, allow_pickle=False) as npz:
        arrays = dict(npz)
    arrays["embedding/bias"] = np.array([{"evil": 1}], dtype=object)  # needs pickle to load
    path = tmp_path / "pickled.npz"
    np.savez(path, **arrays)
    with pytest.raises(CheckpointError, match="not a readable .npz file: key 'embedding/bias'"):
        read_checkpoint(path)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="not a readable .npz"):
        read_checkpoint(truncated)
    # A file of another kind is named for what it is, with no pickle hint (issue 25).
    text = tmp_path / "text.npz"
    text.write_text("<html>not found</html>")
    with pytest.raises(CheckpointError, match="it is a text file \\(it starts '<html>not") as e:
        read_checkpoint(text)
    assert "allow_pickle" not in str(e.value) and "pickled (object)" not in str(e.value)


def test_loaded_tensors_are_fresh_frozen_cpu_float32(tmp_path):
    components = random_components(TINY, TINY_IMAGE, seed=5)
    path = tmp_path / "ckpt.npz"
    save_npz(path, components, TINY)
    loaded = load_checkpoint(path, TINY, TINY_IMAGE)
    tensors = [t for c in loaded.values() for t in c.values()]
    assert not any(t.requires_grad for t in tensors)
    assert all(t.dtype == torch.float32 and t.device.type == "cpu" for t in tensors)
    images = random_images(2, TINY_IMAGE)
    plain = build_model(TINY, TINY_IMAGE, components)(images)
    assert torch.equal(build_model(TINY, TINY_IMAGE, loaded)(images), plain)


@pytest.mark.slow
def test_full_size_ti16_checkpoint_as_the_vitt3_root(tmp_path):
    """A Ti/16 file shaped like the real augreg one (12 blocks, 224 px, 21843 classes) loads
    as VitT3's root (3 blocks, 32 px, headless) and computes the Flax forward."""
    from tests.models.conftest import flax_reference_logits

    full = VitArch.from_size("Ti/16", num_classes=21843)
    components = random_components(full, 224, seed=11)
    path = tmp_path / "Ti_16.npz"
    save_npz(path, components, full)
    capped = VitArch.from_size("Ti/16", num_layers=3, num_classes=4)
    loaded = load_checkpoint(path, capped, 32)
    assert sorted(k for k in loaded if k.startswith("encoderblock_")) == [
        f"encoderblock_{i}" for i in range(3)
    ]
    assert loaded["posembed_input"]["pos_embedding"].shape == (1, 5, 192)
    loaded["head"] = {"weight": torch.randn(4, 192), "bias": torch.randn(4)}
    # The reference reads the same tensors in npz form.
    reference_path = tmp_path / "capped.npz"
    save_npz(reference_path, loaded, capped)
    with np.load(reference_path, allow_pickle=False) as npz:
        arrays = dict(npz)
    images = random_images(2, 32)
    expected = flax_reference_logits(arrays, images)
    got = AssembledVit(capped, 32, loaded)(images).detach().double().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_munet_export_folder_of_a_singlepath_path(tmp_path, tiny_components):
    from munet.models import merge_components
    from munet.models.export import CONFIG_FILE, Preprocessing, save_exported

    node = {"type": "vit", "arch": TINY.to_dict(), "image_size": TINY_IMAGE}
    folder = save_exported(
        tmp_path / "export",
        node,
        merge_components(tiny_components),
        preprocessing=Preprocessing(TINY_IMAGE, (TINY_IMAGE, TINY_IMAGE)),
        class_names=list("abcde"),
        provenance={"agent_id": "VitCpu~t", "path_id": 1, "task_name": "t"},
        metrics={},
    )
    assert read_checkpoint(folder).layout == "munet export"
    loaded = load_checkpoint(folder, TINY, TINY_IMAGE)
    assert torch.equal(_logits(loaded), _logits(tiny_components))
    config = json.loads((folder / CONFIG_FILE).read_text())
    config["model"]["type"] = "multipath"
    (folder / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="a munet export of a 'multipath' model"):
        read_checkpoint(folder)
