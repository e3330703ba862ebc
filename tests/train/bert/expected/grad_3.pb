Bln_emb.weightJ@«ÑÃ<KüÆ¼uu›»þcr<o¬7½Ô¶ã:{K<	P»c©<¾|Q<a´œ¸3õ;¸
{¼Á4¼²M<­<