Bh.0.attn.c_proj.biasJ t~>Xã=þ[R¾ajï½
e!¾}r¾{7;¤è”¾