Bh.0.attn.c_proj.biasJ "c>»9>®Yy¾“öÑ½È_
¾ÿ7F¾[ó]½Þ’‹¾