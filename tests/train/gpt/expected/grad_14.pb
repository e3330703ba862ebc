Bh.1.ln_1.weightJ 6=s›B="nN<DÞS=ýØþ<}l“=
óÈ;;¾