"""Formula-driven pretraining recipes, one module per recipe family.

Each recipe module defines ``classes(num_classes, g) -> dict[str, Tensor]`` (the class formulas,
drawn once from a CPU generator) and ``render(params, labels, image_size, g) -> Tensor`` (a
batch of float32 images (B, 3, S, S) in [-1, 1], vectorised, on ``g``'s device). They import
nothing from munet outside this package: the images come from formulas alone, never from an
evaluation task (tests/pretrain/test_generators.py checks the imports).
"""
