Blayers.1.value.biasJ@˜)Ω3â∑Ωº?>T∆íΩm'{æ2Ÿgæ‚M>+nW>#Îb=¶:mæ¶zé<fBæR_›=©‡
>∂ﬂ<ÿÂZæ