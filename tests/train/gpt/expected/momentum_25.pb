Bh.1.c_proj.biasJ “[Ü=ÍÞÑ½Vò>—Fà¼—ûâ½†.î½a(>d
Ö¼