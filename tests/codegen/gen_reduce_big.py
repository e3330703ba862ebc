#!/usr/bin/env python3
"""Writes reduce_big.onnx (committed; run with Debian's python3-onnx to
remake it): reductions with few results over many elements, which the GPU
reduces across its whole grid (cg_kernel_grid_reduce): a squared norm plus
one (rank 0), 4 row sums of 16384, and a maximum over 65536."""
import onnx
from onnx import helper, TensorProto as T

x = helper.make_tensor_value_info('x', T.FLOAT, [64, 1024])
outs = [helper.make_tensor_value_info('norm', T.FLOAT, []),
        helper.make_tensor_value_info('rows', T.FLOAT, [4]),
        helper.make_tensor_value_info('top', T.FLOAT, [])]
const = lambda name, t, dims, v: helper.make_node(
    'Constant', [], [name], value=helper.make_tensor(name, t, dims, v))
nodes = [
    helper.make_node('Mul', ['x', 'x'], ['sq']),
    helper.make_node('ReduceSum', ['sq'], ['s'], keepdims=0),
    const('one', T.FLOAT, [], [1.0]),
    helper.make_node('Add', ['s', 'one'], ['norm']),
    const('shape', T.INT64, [2], [4, 16384]),
    helper.make_node('Reshape', ['x', 'shape'], ['x8']),
    const('ax', T.INT64, [1], [1]),
    helper.make_node('ReduceSum', ['x8', 'ax'], ['rows'], keepdims=0),
    helper.make_node('ReduceMax', ['x'], ['top'], keepdims=0),
]
m = helper.make_model(helper.make_graph(nodes, 'reduce_big', [x], outs),
                      opset_imports=[helper.make_opsetid('', 13)], producer_name='pcc tests')
onnx.checker.check_model(m)
onnx.save(m, 'reduce_big.onnx')
