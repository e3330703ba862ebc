BasJ
ף<