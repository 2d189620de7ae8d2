"""munet's command line with this experiment's candidate model sizes registered.

Used as ``python experiments/hybrid_cpu/munet_sizes.py run --agent VitCpu --set model=h16x2 ...``:
the candidates are not in munet's size registry (only the chosen one ships).
"""

import sys

from munet.models.arch import StemArch, VitSize, register_vit_size

# The transformer of mu/4 (4 blocks of width 64, 2 heads, MLP 256) on small ResNet-v2 stems:
# a 3 x 3 stride-1 root without pool, then bottleneck stages (stage 0 at stride 1, later ones 2).
CANDIDATES = {
    # root 16 ch, stages (1, 1): 128-channel map at 1/2 the image side, 2 x 2 patches: stride 4.
    "h16x2": VitSize(64, 4, 2, 256, patch_size=2, stem=StemArch(16, (1, 1), 3, 1, False, 8)),
    # root 8 ch, stages (1, 1): the same shape at half the stem width.
    "h8x2": VitSize(64, 4, 2, 256, patch_size=2, stem=StemArch(8, (1, 1), 3, 1, False, 4)),
}

if __name__ == "__main__":
    for name, size in CANDIDATES.items():
        register_vit_size(name, size)
    from munet.cli import main

    sys.exit(main(sys.argv[1:]))
