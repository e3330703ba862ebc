
Bfc.biasJ(uZv=
¶j=Öþ±=™õ¿=* />‹Is=\ÎË¾Ç¾ºU>N|Ö=