Blayers.1.query.biasJ@vª.¼x¾¾M:l>ª	ã=rJv¾[³Ý=Ç€\½®J<”
Z>ƒâW=Š'¾…”Œ=¨¥U=éëH>0Ä?¾Ýî¾