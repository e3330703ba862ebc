#!/usr/bin/env python3
"""Write a ResNet-50 (torchvision's layout, random weights) as an ONNX model.

    python3 benchmarks/resnet50.py --keep DIR [--batch 1] [--pcc build/compiler/pcc]

Builds ResNet-50 in plain torch (torchvision is not needed): a 7x7/2 stem
conv, BatchNorm, ReLU, 3x3/2 max pool, bottleneck blocks [3, 4, 6, 3]
(1x1, 3x3 with the stride, 1x1 expanding 4x, a projection shortcut on the
first block of each stage), global average pool and a 1000-way fc; He
initialization from a fixed seed, BatchNorm statistics randomized so that
they are not the identity, eval mode.  Exports it as ONNX opset 17 for
--batch images of 3x224x224 (model.onnx, weights inline: 102 MB) and
writes test_data_set_0/input_0.pb (a random image batch) and output_0.pb
(torch's logits), the layout of tests/models/.

With --pcc, also compiles it for one CPU rank (pcc MODEL --cluster cpu:1)
and, with --run, runs the plan with pcc-run and compares its logits with
torch's through tests/pb_cmp (both from the same build directory).
The model directory is a temporary one, removed at the end, unless --keep
DIR names one.  codegen.sh's RESNET50 row uses such a directory.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

try:
    import numpy as np
    import onnx
    import torch
    import torch.nn as nn
    from onnx import numpy_helper
except ImportError:
    # A pyenv (or venv) python3 may shadow Debian's, which has the packages.
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

OPSET = 17
SEED = 1234
LAYERS = [3, 4, 6, 3]  # bottleneck blocks per stage (ResNet-50)
WIDTHS = [64, 128, 256, 512]  # each block's inner width; its output is 4x
EXPANSION = 4
CLASSES = 1000
IMAGE = 224


def conv_bn(cin, cout, k, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False),
        nn.BatchNorm2d(cout),
    )


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * EXPANSION
        self.a = conv_bn(cin, width, 1, 1)
        self.b = conv_bn(width, width, 3, stride)
        self.c = conv_bn(width, cout, 1, 1)
        self.down = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.relu(self.a(x))
        y = self.relu(self.b(y))
        y = self.c(y)
        return self.relu(y + (self.down(x) if self.down is not None else x))


class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        blocks, cin = [], 64
        for i, (n, width) in enumerate(zip(LAYERS, WIDTHS)):
            for j in range(n):
                blocks.append(Bottleneck(cin, width, 2 if j == 0 and i > 0 else 1))
                cin = width * EXPANSION
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, CLASSES)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                # random statistics, near the identity, so that the
                # activations keep their scale through 16 blocks
                nn.init.uniform_(m.weight, 0.5, 1.0)
                nn.init.uniform_(m.bias, -0.1, 0.1)
                nn.init.uniform_(m.running_mean, -0.1, 0.1)
                nn.init.uniform_(m.running_var, 0.5, 1.5)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(self.pool(x), 1))


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(array), name=name).SerializeToString())


def export(model, images, out_dir):
    """Write model.onnx + test_data_set_0/ into out_dir."""
    model_path = os.path.join(out_dir, "model.onnx")
    with torch.no_grad():
        logits = model(images).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (images,),
            model_path,
            opset_version=OPSET,
            input_names=["images"],
            output_names=["logits"],
            do_constant_folding=True,  # folds BatchNorm into the convolutions
        )
    onnx.checker.check_model(model_path)
    data_dir = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    write_tensor(os.path.join(data_dir, "input_0.pb"), images.numpy(), "images")
    write_tensor(os.path.join(data_dir, "output_0.pb"), logits, "logits")


def check_pcc(pcc, out_dir, run):
    """Compile with pcc; with run, compare pcc-run's logits with torch's."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(pcc)))
    plan = os.path.join(out_dir, "plan.bin")
    subprocess.run([pcc, os.path.join(out_dir, "model.onnx"), "--cluster", "cpu:1", "-o", plan], check=True)
    print(f"resnet50: pcc compiled {plan}")
    if not run:
        return
    got = os.path.join(out_dir, "pcc_out")
    data = os.path.join(out_dir, "test_data_set_0")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    subprocess.run(
        ["mpirun", "--oversubscribe", "-np", "1", os.path.join(build, "runtime", "pcc-run"), plan, "-i", data,
         "-o", got],
        check=True, env=env)
    subprocess.run([os.path.join(build, "tests", "pb_cmp"), got, data], check=True)
    print("resnet50: pcc-run's logits match torch's")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", metavar="DIR", help="write the model here and keep it")
    parser.add_argument("--batch", type=int, default=1, help="images per inference")
    parser.add_argument("--pcc", metavar="PCC", help="compile the model with this pcc")
    parser.add_argument("--run", action="store_true", help="with --pcc: run the plan and compare with torch")
    args = parser.parse_args()

    torch.manual_seed(SEED)
    model = ResNet50().eval()
    images = torch.randn(args.batch, 3, IMAGE, IMAGE)
    out_dir = args.keep or tempfile.mkdtemp(prefix="pcc_resnet50_")
    os.makedirs(out_dir, exist_ok=True)
    try:
        export(model, images, out_dir)
        print(f"resnet50: wrote {out_dir}/model.onnx (batch {args.batch})")
        if args.pcc:
            check_pcc(args.pcc, out_dir, args.run)
    finally:
        if not args.keep:
            shutil.rmtree(out_dir)


if __name__ == "__main__":
    main()
