Bh.1.attn.c_proj.biasJ Ø >6Í>Ð‰>L* ¾ÎßS¾î^S¾
*õ=j¬Ð½