Bh.0.c_proj.biasJ ‡øÖ½4$ú=Â)½UN
¾s-i¾L¾|ƒm><Ò¾