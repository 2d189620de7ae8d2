"""Formula-driven pretraining recipes, one module per recipe family (registered in
munet.pretrain.generators.KINDS).

Each recipe module defines ``classes(num_classes, g) -> dict[str, Tensor]`` (the class formulas,
drawn once from a CPU generator) and ``density(params, labels, image_size, g, points) ->
Tensor`` (the uncoloured figures (B, S, S) in [0, 1] of a batch, vectorised, on ``g``'s
device; the generator colours and places them). They import nothing from munet outside this
package: the images come from formulas alone, never from an evaluation task
(tests/pretrain/test_generators.py checks the imports).
"""
