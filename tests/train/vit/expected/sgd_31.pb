
B	head.biasJ(#)C>°U(¾dS¾––>¶eú¼àXß<…==eJ‚=‰±è=>Ñ½