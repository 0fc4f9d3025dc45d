#!/bin/bash
B=/work/main/bench/.work/ab-8f6db9e; A=/work/main
O=/tmp/s56/ab
/tmp/s56/one.sh $B $O/b1-warm
/tmp/s56/one.sh $A $O/a1-cold
/tmp/s56/one.sh $A $O/a1-warm
/tmp/s56/one.sh $B $O/b2-cold
/tmp/s56/one.sh $B $O/b2-warm
/tmp/s56/one.sh $A $O/a2-cold
/tmp/s56/one.sh $A $O/a2-warm
/tmp/s56/one.sh $A $O/a2-warm2
/tmp/s56/one.sh $B $O/b3-cold
/tmp/s56/one.sh $B $O/b3-warm
/tmp/s56/one.sh $B $O/b3-warm2
