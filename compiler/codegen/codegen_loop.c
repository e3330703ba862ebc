/*
 * codegen_loop.c: the loops codegen builds around kernel values
 * (codegen_internal.h): for (i = lo; i < hi; i += step), with an optional
 * accumulator carried as a phi.
 */
#include "compiler/codegen/codegen_internal.h"

int64_t cg_tail_numel(const struct ir_shape *s, int from)
{
	int64_t n = 1;
	for (int d = from; d < s->rank; d++)
		n *= s->dims[d];
	return n;
}

void cg_loop_begin(struct cg *c, struct cg_loop *l, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef acc)
{
	l->from = LLVMGetInsertBlock(c->b);
	l->head = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "head");
	l->body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "body");
	l->exit = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "exit");
	LLVMBuildBr(c->b, l->head);
	LLVMPositionBuilderAtEnd(c->b, l->head);
	l->i = LLVMBuildPhi(c->b, c->i64, "i");
	l->start_i = lo;
	l->acc = acc ? LLVMBuildPhi(c->b, LLVMTypeOf(acc), "acc") : NULL;
	l->start_acc = acc;
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, l->i, hi, ""), l->body, l->exit);
	LLVMPositionBuilderAtEnd(c->b, l->body);
}

LLVMValueRef cg_loop_end(struct cg *c, struct cg_loop *l, LLVMValueRef step, LLVMValueRef acc)
{
	LLVMValueRef next = LLVMBuildAdd(c->b, l->i, step, "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
	LLVMBuildBr(c->b, l->head);
	LLVMValueRef iv[2] = { l->start_i, next };
	LLVMBasicBlockRef ib[2] = { l->from, latch };
	LLVMAddIncoming(l->i, iv, ib, 2);
	if (l->acc) {
		LLVMValueRef av[2] = { l->start_acc, acc };
		LLVMAddIncoming(l->acc, av, ib, 2);
	}
	LLVMPositionBuilderAtEnd(c->b, l->exit);
	return l->acc;
}
