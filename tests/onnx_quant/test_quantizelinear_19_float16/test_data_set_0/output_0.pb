ByJ
P<_iV_Œ››G