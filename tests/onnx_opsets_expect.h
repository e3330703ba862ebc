/*
 * onnx_opsets_expect.h: written by tests/gen_onnx_opsets.py (onnx 1.16.2's reference
 * evaluator, numpy 1.26.4); do not edit. The inputs and expected
 * outputs of test_onnx_opsets.c's models.
 */
#ifndef PCC_TESTS_ONNX_OPSETS_EXPECT_H
#define PCC_TESTS_ONNX_OPSETS_EXPECT_H

#include <math.h>
#include <stdint.h>

/* [2, 3, 4] */
static const float reduce_x[] = { -3.0f, -2.75f, -2.5f, -2.25f, -2.0f, -1.75f, -1.5f, -1.25f,
				  -1.0f, -0.75f, -0.5f, -0.25f, 0.0f,  0.25f,  0.5f,  0.75f,
				  1.0f,  1.25f,  1.5f,  1.75f,  2.0f,  2.25f,  2.5f,  2.75f };
/* [2] */
static const int64_t reduce_ax_l2[] = { -1, 0 };
/* [1] */
static const int64_t reduce_ax_lse[] = { 1 };
/* [1] */
static const int64_t reduce_ax_prod[] = { 2 };
/* [3] */
static const float reduce_l2[] = { 5.36190271f, 4.33012724f, 4.97493696f };
/* [2, 1, 4] */
static const float reduce_lse[] = { -0.592393994f, -0.342393994f, -0.0923939943f, 0.157606006f,
				    2.40760612f,   2.65760612f,   2.90760612f,    3.15760612f };
/* [] */
static const float reduce_ssq[] = { 72.25f };
/* [2, 3] */
static const float reduce_prod[] = { 46.40625f, 6.5625f, 0.09375f, 0.0f, 3.28125f, 30.9375f };
/* [3, 3] */
static const uint8_t reduce_bool_b[] = { 0, 0, 0, 0, 1, 0, 1, 1, 1 };
/* [1] */
static const int64_t reduce_bool_ax[] = { 1 };
/* [3] */
static const uint8_t reduce_bool_any[] = { 0, 1, 1 };
/* [3] */
static const uint8_t reduce_bool_all[] = { 0, 0, 1 };
/* [2, 3] */
static const float pad_x[] = { 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f };
/* [2] */
static const int64_t pad_p_wrap[] = { 4, 2 };
/* [1] */
static const int64_t pad_ax1[] = { 1 };
/* [2] */
static const int64_t pad_p_const[] = { 1, 2 };
/* [] */
static const float pad_v[] = { 9.5f };
/* [1] */
static const int64_t pad_axm1[] = { -1 };
/* [2] */
static const int64_t pad_p_edge[] = { 1, 2 };
/* [1] */
static const int64_t pad_ax0[] = { 0 };
/* [2, 9] */
static const float pad_wrap[] = { 3.0f, 1.0f, 2.0f, 3.0f, 1.0f, 2.0f, 3.0f, 1.0f, 2.0f,
				  6.0f, 4.0f, 5.0f, 6.0f, 4.0f, 5.0f, 6.0f, 4.0f, 5.0f };
/* [2, 6] */
static const float pad_const[] = { 9.5f, 1.0f, 2.0f, 3.0f, 9.5f, 9.5f, 9.5f, 4.0f, 5.0f, 6.0f, 9.5f, 9.5f };
/* [5, 3] */
static const float pad_edge[] = { 1.0f, 2.0f, 3.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f,
				  6.0f, 4.0f, 5.0f, 6.0f, 4.0f, 5.0f, 6.0f };
/* [2, 3] */
static const float scatter_d[] = { 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f };
/* [2, 3] */
static const int64_t scatter_ie[] = { 0, 2, 0, 1, 1, 2 };
/* [2, 3] */
static const float scatter_ue[] = { 5.0f, -1.0f, 0.5f, -4.0f, 7.0f, 2.0f };
/* [2, 3] */
static const float scatter_emax[] = { 5.0f, 2.0f, 3.0f, 4.0f, 7.0f, 6.0f };
/* [2, 3] */
static const float scatter_emin[] = { 0.5f, 2.0f, -1.0f, 4.0f, -4.0f, 2.0f };
/* [3, 2] */
static const int64_t scatter_ind[] = { 1, 0, 1, 0, 0, 2 };
/* [3] */
static const float scatter_und[] = { -2.0f, 0.5f, 3.5f };
/* [2, 3] */
static const float scatter_ndmin[] = { 1.0f, 2.0f, 3.0f, -2.0f, 5.0f, 6.0f };
/* [2, 3] */
static const float scatter_ndmax[] = { 1.0f, 2.0f, 3.5f, 4.0f, 5.0f, 6.0f };
/* [7] */
static const float split_x[] = { 0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f };
/* [3] */
static const float split_a[] = { 0.0f, 1.0f, 2.0f };
/* [3] */
static const float split_b[] = { 3.0f, 4.0f, 5.0f };
/* [1] */
static const float split_c[] = { 6.0f };
/* [1, 1, 4, 6] */
static const float resize_x[] = { 0.0f,        0.142857149f, 0.404061019f, 0.742307544f, 1.14285719f, 1.59719145f,
				  2.09956264f, 2.64575124f,  3.23248816f,  3.85714293f,  4.5175395f,  5.21183872f,
				  5.93846035f, 6.69602346f,  7.48331451f,  8.29924965f,  9.14285755f, 10.013257f,
				  10.909647f,  11.8312969f,  12.7775316f,  13.7477274f,  14.7413073f, 15.7577314f };
/* [2] */
static const int64_t resize_sz_hw[] = { 3, 3 };
/* [4] */
static const float resize_sc_half[] = { 1.0f, 1.0f, 0.5f, 0.5f };
/* [4] */
static const int64_t resize_sz_cubic[] = { 1, 1, 3, 2 };
/* [4] */
static const float resize_sc_sym[] = { 1.0f, 1.0f, 0.699999988f, 0.600000024f };
/* [1] */
static const float resize_sc_w[] = { 1.5f };
/* [1, 1, 2, 3] */
static const float resize_keep[] = { 1.2220428f, 2.05900002f, 3.11735678f, 8.84385681f, 10.5769558f, 12.4137878f };
/* [1, 1, 3, 5] */
static const float resize_keep_big[] = { 0.0f,        0.142857149f, 0.742307544f, 1.14285719f, 1.59719145f,
					 2.09956264f, 2.64575124f,  3.85714293f,  4.5175395f,  5.21183872f,
					 10.909647f,  11.8312969f,  13.7477274f,  14.7413073f, 15.7577314f };
/* [1, 1, 2, 3] */
static const float resize_aa_lin[] = { 1.77124584f, 2.61535001f, 3.6373558f, 8.45599556f, 10.0403976f, 11.712656f };
/* [1, 1, 3, 2] */
static const float resize_aa_cub[] = { 0.410894185f, 1.58303857f, 4.48287916f, 6.72964859f, 10.9092216f, 13.8379726f };
/* [1, 1, 2, 3] */
static const float resize_sym[] = { 2.03278995f, 2.90803742f, 3.90153956f, 7.66431856f, 9.04228497f, 10.4928074f };
/* [1, 1, 4, 9] */
static const float resize_axis_w[] = {
	0.0f,        0.0f,        0.142857149f, 0.404061019f, 0.404061019f, 0.742307544f, 1.14285719f, 1.14285719f,
	1.59719145f, 2.09956264f, 2.09956264f,  2.64575124f,  3.23248816f,  3.23248816f,  3.85714293f, 4.5175395f,
	4.5175395f,  5.21183872f, 5.93846035f,  5.93846035f,  6.69602346f,  7.48331451f,  7.48331451f, 8.29924965f,
	9.14285755f, 9.14285755f, 10.013257f,   10.909647f,   10.909647f,   11.8312969f,  12.7775316f, 12.7775316f,
	13.7477274f, 14.7413073f, 14.7413073f,  15.7577314f
};
/* [2, 4, 3] */
static const float groupnorm_x[] = { 0.5f,         2.18294191f,    2.31859493f,   0.782240033f, -1.013605f,
				     -1.41784859f, -0.0588309765f, 1.81397319f,   2.47871637f,  1.32423687f,
				     -0.58804214f, -1.49998045f,   -0.573145866f, 1.34033418f,  2.48121476f,
				     1.80057573f,  -0.0758066773f, -1.42279494f,  -1.00197446f, 0.799754381f,
				     2.32589054f,  2.17331123f,    0.482297391f,  -1.19244075f };
/* [2] */
static const float groupnorm18_s[] = { 1.5f, -0.5f };
/* [2] */
static const float groupnorm18_b[] = { 0.25f, 1.0f };
/* [2, 4, 3] */
static const float groupnorm18_y[] = { 0.18814829f,  1.96083009f,   2.10371661f,  0.485438257f, -1.40616703f,
				       -1.83196616f, 1.22736502f,   0.559088349f, 0.321886659f, 0.733842015f,
				       1.41620457f,  1.74161339f,   -1.01470983f, 1.06276298f,  2.30142164f,
				       1.5624491f,   -0.474746704f, -1.93717718f, 1.58320022f,  0.926379859f,
				       0.370026857f, 0.425649643f,  1.04210877f,  1.65263462f };
/* [4] */
static const float groupnorm21_s[] = { 1.5f, -0.5f, 2.0f, 1.0f };
/* [4] */
static const float groupnorm21_b[] = { 0.25f, 1.0f, 0.0f, -1.0f };
/* [2, 4, 3] */
static const float groupnorm21_y[] = { 0.18816337f,  1.96041262f,   2.10326433f,  0.921539724f, 1.55192101f,
				       1.6938194f,   -0.909230828f, 1.76320207f,  2.71176982f,  -0.467818171f,
				       -1.83219934f, -2.48285294f,  -1.014382f,   1.06255233f,  2.30088973f,
				       0.562630355f, 1.24151957f,   1.72887003f,  -2.33218718f, 0.294403136f,
				       2.51922989f,  0.148398563f,  -1.08419549f, -2.30492592f };
/* [1, 8, 4] */
static const float col2im_x[] = { -3.0f, -2.5f, -2.0f, -1.5f, -1.0f, -0.5f, 0.0f,  0.5f,  1.0f,  1.5f, 2.0f,
				  2.5f,  3.0f,  3.5f,  4.0f,  4.5f,  5.0f,  5.5f,  6.0f,  6.5f,  7.0f, 7.5f,
				  8.0f,  8.5f,  9.0f,  9.5f,  10.0f, 10.5f, 11.0f, 11.5f, 12.0f, 12.5f };
/* [1, 8, 20] */
static const float col2im_xd[] = {
	-2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f,
	0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,
	2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,
	4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f,
	-1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,
	1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,
	3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,
	-2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f,
	0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,
	2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f,  4.0f,  -2.0f, -1.0f, 0.0f,  1.0f,  2.0f,  3.0f
};
/* [2] */
static const int64_t col2im_img[] = { 5, 5 };
/* [2] */
static const int64_t col2im_blk[] = { 2, 2 };
/* [1, 2, 5, 5] */
static const float col2im_y[] = { -3.0f, -1.0f, -2.5f, -0.5f, 0.0f,  1.0f,  3.0f, 1.5f,  3.5f, 0.0f, -2.0f, 0.0f, -1.5f,
				  0.5f,  0.0f,  2.0f,  4.0f,  2.5f,  4.5f,  0.0f, 0.0f,  0.0f, 0.0f, 0.0f,  0.0f, 5.0f,
				  7.0f,  5.5f,  7.5f,  0.0f,  9.0f,  11.0f, 9.5f, 11.5f, 0.0f, 6.0f, 8.0f,  6.5f, 8.5f,
				  0.0f,  10.0f, 12.0f, 10.5f, 12.5f, 0.0f,  0.0f, 0.0f,  0.0f, 0.0f, 0.0f };
/* [1, 2, 5, 5] */
static const float col2im_yd[] = { 3.0f,  6.0f, 1.0f,  3.0f,  -2.0f, 4.0f,  8.0f, 5.0f, 9.0f, -1.0f, 0.0f,  0.0f, 4.0f,
				   8.0f,  5.0f, -1.0f, -2.0f, 0.0f,  2.0f,  4.0f, 4.0f, 1.0f, 3.0f,  -2.0f, 0.0f, -1.0f,
				   -2.0f, 0.0f, 2.0f,  4.0f,  3.0f,  -1.0f, 3.0f, 0.0f, 4.0f, 6.0f,  5.0f,  9.0f, -1.0f,
				   3.0f,  2.0f, 4.0f,  6.0f,  1.0f,  3.0f,  0.0f, 0.0f, 2.0f, 4.0f,  6.0f };
/* [3, 5] */
static const float ccp_x[] = { 1.0f, 2.0f,  3.0f,  4.0f,  5.0f,  6.0f,  7.0f, 8.0f,
			       9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f };
/* [2] */
static const int64_t ccp_shape[] = { 6, 2 };
/* [1] */
static const int64_t ccp_shape_ax[] = { 8 };
/* [6, 2] */
static const float ccp_y[] = { 0.0f, 0.0f, 2.0f, 3.0f, 7.0f, 8.0f, 12.0f, 13.0f, 0.0f, 0.0f, 0.0f, 0.0f };
/* [3, 8] */
static const float ccp_ya[] = { 0.0f, 1.0f,  2.0f, 3.0f, 4.0f, 5.0f,  0.0f,  0.0f,  0.0f,  6.0f,  7.0f, 8.0f,
				9.0f, 10.0f, 0.0f, 0.0f, 0.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f, 0.0f, 0.0f };
/* [9] */
static const float gelu_x[] = { -3.0f, -2.25f, -1.5f, -0.75f, 0.0f, 0.75f, 1.5f, 2.25f, 3.0f };
/* [9] */
static const float gelu_y[] = { -0.00404969417f, -0.0275050644f, -0.100210801f, -0.169970512f, 0.0f,
				0.580029488f,    1.39978921f,    2.22249484f,   2.99595022f };
/* [9] */
static const float gelu_yt[] = { -0.00363739207f, -0.0272013303f, -0.100428425f, -0.170039445f, 0.0f,
				 0.579960585f,    1.39957154f,    2.22279859f,   2.99636269f };
/* [1, 1, 5, 5] */
static const float avgpool_x[] = { 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f,  4.0f,  4.5f,  5.0f,  5.5f, 6.0f,
				   6.5f, 7.0f, 7.5f, 8.0f, 8.5f, 9.0f, 9.5f, 10.0f, 10.5f, 11.0f, 11.5f, 12.0f };
/* [1, 1, 5, 3] */
static const float avgpool_y[] = { 0.75f, 1.75f, 1.0f, 1.5f, 3.5f, 2.0f,  2.75f, 6.0f,
				   3.25f, 4.0f,  8.5f, 4.5f, 2.0f, 4.25f, 2.25f };
/* [1, 1, 5, 3] */
static const float avgpool_y0[] = { 3.0f, 3.5f, 4.0f, 3.0f, 3.5f, 4.0f, 5.5f, 6.0f,
				    6.5f, 8.0f, 8.5f, 9.0f, 8.0f, 8.5f, 9.0f };
/* [4] */
static const int32_t bitwise_a[] = { 12, -1, 90, 7 };
/* [4] */
static const int32_t bitwise_b[] = { 10, 5, 240, -8 };
/* [3] */
static const uint8_t bitwise_u[] = { 90, 0, 255 };
/* [4] */
static const int32_t bitwise_and[] = { 8, 5, 80, 0 };
/* [4] */
static const int32_t bitwise_or[] = { 14, -1, 250, -1 };
/* [4] */
static const int32_t bitwise_xor[] = { 6, -6, 170, -1 };
/* [4] */
static const int32_t bitwise_not[] = { -13, 0, -91, -8 };
/* [3] */
static const uint8_t bitwise_unot[] = { 165, 255, 0 };

#endif
