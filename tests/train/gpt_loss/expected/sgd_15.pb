Bgpt.h.1.ln_1.biasJ@5rï½VX=buŠ>ñÁT¾+ÿ>«'i¼ˆÜ¾òð=pSª=Çbî½£
r¼Ž´>L™²½u\ ¾¿, >épç=