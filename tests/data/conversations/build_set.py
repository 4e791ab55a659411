"""Writes conversations.jsonl, observations.jsonl and questions.jsonl: a conversational memory set for
issue 52 (multi-session chats between two people, the notes a memory agent would keep from them, and
questions with the turns that answer them). Every line was written by one engineer of this project; no
source text, no model output. Licence: Apache-2.0. Run from anywhere:

    python build_set.py            # checks, then writes the three files and prints counts
    python build_set.py --check    # checks and prints counts, writes nothing

How the data is written below (one dict per conversation):
* ``script``: sessions, each opened by ``== YYYY-MM-DD``, then one turn a line ``NAME: text``. A turn
  that states a fact the notes or questions use carries a tag at its end, ``[[tag]]`` (several:
  ``[[a, b]]``); the tag is resolved to the turn id ``D<session>:<n>`` (n counts from 1 in each session).
* ``obs``: ``Speaker | note text | tag tag ...``: one fact about one speaker, with the turns that state it.
* ``qs``: ``code | question | answer | tags``; code s single-hop, m multi-hop, t temporal, n negation,
  a adversarial (never happened: answer "not mentioned", no tags), o adversarial about the other person
  (answer "not mentioned", tags = the turns about the person it did happen to, other_person: true).
"""

import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
CATEGORY = {
    "s": "single-hop",
    "m": "multi-hop",
    "t": "temporal",
    "n": "negation",
    "a": "adversarial",
    "o": "adversarial",
}
DEV = {"c1", "c2", "c3"}
CONVS = []


# c1: two friends from university, one in design, one a nurse -----------------------------------------
CONVS.append(
    dict(
        id="c1",
        speakers=("Ana", "Ben"),
        relation="friends since university",
        script="""
== 2023-01-14
ANA: Ben! Guess who has a new flatmate with four legs.
BEN: No way. You actually did it?
ANA: I did. I adopted a beagle from the rescue in Hackney last Saturday. His name is Biscuit. [[c1_biscuit]]
BEN: Biscuit the beagle. That is almost too perfect.
ANA: He came with the name, I couldn't change it. He's about two months old and he howls at the kettle.
BEN: Pepper would have a heart attack. She's never seen a dog up close in her nine years. [[c1_pepper]]
ANA: Your cat has seen everything, she'd just stare at him until he left.
BEN: Fair. How are you fitting a puppy around the agency job?
ANA: The studio lets me bring him in on Fridays. The rest of the week I'm home by half five, designing menus and posters all day isn't exactly a night shift. [[c1_agency]]
BEN: Speaking of which, I'm on nights again all of January. Four on, three off. [[c1_nights]]
ANA: That sounds brutal. Are you still getting your runs in?
BEN: Trying to. I signed up for the Manchester marathon in April, so it's forty miles a week whether I like it or not. [[c1_marathon]]
ANA: You're mad. I get tired walking up to the station.
BEN: You say that, but you'll be walking a beagle twice a day now.
ANA: True. He already pulls like a tractor.
BEN: Get him into a puppy class early, trust me.
ANA: The rescue gave me a voucher for one, it starts in February.
BEN: Good. Send pictures. Lots of pictures.
ANA: You'll regret asking.
BEN: I never regret beagle pictures.
== 2023-02-09
BEN: Quick question, you're the food person. Where should I take Maya for Valentine's?
ANA: How fancy?
BEN: Fancy enough that she knows I tried. She loves seafood. [[c1_maya_seafood]]
ANA: Rather you than me. I'm not a fan of Valentine's Day, I'd take a takeaway on the sofa over a fancy dinner any day. [[c1_not_fan_valentines]]
BEN: Noted, you're not getting a card. So where do I take her?
ANA: Then the oyster place on Exmouth Market. I can't go near it myself, I'm allergic to shellfish, but everyone raves about it. [[c1_shellfish]]
BEN: I forgot about your allergy. Is it the serious kind?
ANA: EpiPen serious. Prawns once sent me to hospital at nineteen. [[c1_epipen]]
BEN: Good thing you're vegetarian now anyway. [[c1_veggie_q]]
ANA: Five years this spring. I don't even miss fish. [[c1_veggie]]
BEN: I could never. Anyway, oyster place it is. Thank you.
ANA: Also, I've started something new. Pottery classes, Wednesday evenings at the community studio in Dalston. [[c1_pottery_start]]
BEN: Like the film? Spinning wheel, clay everywhere?
ANA: Exactly like that, minus anything good coming out of it. My first bowl looks like an ashtray.
BEN: Everyone's first bowl looks like an ashtray.
ANA: What about you, any new hobbies besides running yourself into the ground?
BEN: I've been doing Spanish on one of those apps. Twenty minutes a day on the bus home. [[c1_spanish_start]]
ANA: Why Spanish?
BEN: Maya's family is from Valencia. Her grandmother doesn't speak English and I'd like to talk to her properly. [[c1_maya_valencia]]
ANA: That's really sweet.
BEN: She laughs at my accent, but she laughs kindly.
ANA: How's Biscuit's rival doing?
BEN: Pepper is fine. Fat and happy.
ANA: Biscuit passed his first puppy class, by the way. He sat. Once.
BEN: A genius.
== 2023-03-22
ANA: How's the training going? Only a few weeks to go, right?
BEN: About that. I hurt my knee on my long run on Sunday. Twenty miles in and something just went. [[c1_knee]]
ANA: Oh no. Is it bad?
BEN: The physio thinks it's a strained ligament. No running at all for at least eight weeks. [[c1_no_running]]
ANA: So the marathon's off? [[c1_marathon_out_q]]
BEN: I pulled out yesterday. Months of training for nothing. [[c1_marathon_out]]
ANA: I'm so sorry, Ben. That's gutting.
BEN: It is what it is. I'm more annoyed I can't even cycle to work while it heals.
ANA: Can you swim? My physio always told me swimming is the one thing you can do with a bad knee.
BEN: Maybe. I haven't swum since school. I'll think about it.
ANA: In happier news, Carla and I booked Lisbon! Five days in May. [[c1_lisbon_booked]]
BEN: Your sister Carla? The one who lives in Bristol? [[c1_carla]]
ANA: The very same. She's never been to Portugal and I went years ago, so I'm the tour guide.
BEN: Who's looking after Biscuit?
ANA: My mum offered. She pretends she doesn't like dogs but she's already bought him a bed. [[c1_mum_biscuit]]
BEN: Classic. What dates? [[c1_lisbon_dates_q]]
ANA: The 18th to the 23rd of May. [[c1_lisbon_dates]]
BEN: Eat a custard tart for me.
ANA: Ten of them, at least.
BEN: Pottery still going?
ANA: Yes, I made a mug that actually holds tea. Progress.
== 2023-04-27
BEN: Guess what, I took your advice. I've been swimming at the leisure centre three mornings a week since the start of April. [[c1_swim_start]]
ANA: Look at you! How does the knee feel?
BEN: Much better. Breaststroke hurts, so it's all front crawl. I'm slow but I'm in the water. [[c1_crawl]]
ANA: Didn't you hate the pool at school?
BEN: I used to hate it. Now I never skip a session, it's the only time my phone can't reach me. [[c1_never_skip]]
ANA: Slow is fine. Slow is still swimming.
BEN: How's the pottery? Still making mugs that hold tea?
ANA: I actually quit. The teacher I liked moved to Bristol and the new one just shouts at us. [[c1_pottery_quit]]
BEN: That's a shame, you seemed to enjoy it.
ANA: I did, but it was eighty pounds a month on top of everything Biscuit costs. [[c1_pottery_cost]]
BEN: What's he done now?
ANA: He ate a corner of my sofa. An actual corner, foam and all. [[c1_sofa]]
BEN: Beagles, man.
ANA: The trainer says he's bored, so now he gets a second walk at lunchtime.
BEN: Do you still bring him to the studio?
ANA: On Fridays, yes. He sleeps under my desk and everyone feeds him crisps.
BEN: Maya says hi, by the way. She wants to meet him.
ANA: Bring her round any weekend. Just warn her he jumps.
BEN: I'll bring Pepper too.
ANA: Absolutely not.
BEN: Ha. Fine.
ANA: How's the Spanish?
BEN: Seventy-seven days in a row. I can order in a restaurant and ask where the station is. [[c1_streak77]]
== 2023-05-30
ANA: I have bad news about Lisbon.
BEN: Oh no, what happened?
ANA: Carla fell off her bike and broke her wrist two weeks before we were meant to go. We cancelled the whole trip. [[c1_lisbon_cancel]]
BEN: Poor Carla. Is she okay?
ANA: She's in a cast and furious, but fine. We got most of the money back.
BEN: Will you rebook? [[c1_lisbon_maybe_q]]
ANA: Maybe in the autumn, nothing's fixed. [[c1_lisbon_maybe]]
BEN: I have news too, but smaller. I've given up coffee. [[c1_coffee_quit]]
ANA: You? The man who drank four flat whites a shift?
BEN: Since the first of May. I wasn't sleeping after nights, and my GP said caffeine was half the problem. [[c1_coffee_why]]
ANA: What are you drinking instead? [[c1_peppermint_q]]
BEN: Peppermint tea. It's grim but I'm sleeping. [[c1_peppermint]]
ANA: I have a bigger one. I handed in my notice. From the 1st of June I'm freelance. [[c1_freelance]]
BEN: Ana! That's huge. Scared?
ANA: Terrified. But the agency was only doing menus for chain pubs, and I want to do branding for small businesses. [[c1_branding]]
BEN: You'll be great. Do you have clients lined up?
ANA: One maybe, a bakery in Walthamstow. Fingers crossed. [[c1_bakery_maybe]]
BEN: On a lighter note, Maya and I watched that new horror film, the one set in the lighthouse. You'd hate it. [[c1_lighthouse]]
ANA: I hate all of them. I haven't watched a horror film since I was twelve and I'm not starting now. [[c1_horror]]
BEN: I love them, the worse the better. [[c1_ben_horror]]
ANA: You're an A&E nurse, you see enough blood at work. [[c1_nurse]]
BEN: That's exactly why it doesn't bother me.
== 2023-07-16
BEN: Are you sitting down?
ANA: I am now. What?
BEN: I proposed to Maya on Saturday the 8th. At Buttermere, in the Lake District. She said yes! [[c1_engaged]]
ANA: BEN!!! Congratulations! I'm screaming.
BEN: I was so nervous I dropped the ring in the grass. We spent five minutes on our knees looking for it. [[c1_ring]]
ANA: That is the most you thing I've ever heard.
BEN: She says it makes a better story. How was your trip?
ANA: Cornwall was lovely. I took Biscuit to St Ives for a long weekend in June, the week after I went freelance. [[c1_cornwall]]
BEN: Did you drive down?
ANA: You know I don't drive, I never learned. Train to St Erth and then a bus. Biscuit was very good on the train. [[c1_no_drive]]
BEN: I always forget you can't drive.
ANA: London, who needs a car. And the freelance thing is working. The bakery hired me for their new logo and packaging. [[c1_bakery]]
BEN: Your first client!
ANA: My first client. They paid me partly in cinnamon buns.
BEN: The dream.
ANA: How's the knee? Any running yet?
BEN: Not yet. The physio wants me to keep swimming until September at least. [[c1_swim_continue]]
ANA: And the Spanish? You'll need it for the in-laws now.
BEN: Still going, about a hundred and fifty-five days. Her grandmother cried when I said hello on the phone.
ANA: Stop, that's adorable.
BEN: She also asked when the baby is coming. We got engaged a week ago.
ANA: Grandmothers.
== 2023-09-05
ANA: How's the engaged life?
BEN: Busy. We've set a date. The 8th of June next year, in Valencia. [[c1_wedding_date]]
ANA: Valencia! I'm already picking an outfit.
BEN: You'd better. Also, big change at work: I'm moving to day shifts from October. [[c1_day_shifts]]
ANA: No more nights? That's the best news.
BEN: Ten years of nights. I'm going to see the sun.
ANA: And the Spanish must be flying by now.
BEN: Funny you ask. I stopped. I missed a day at the start of August and lost my 173-day streak, and I never went back. [[c1_spanish_stop]]
ANA: Ben! With the wedding in Valencia?
BEN: I know, I know. Maya says she'll teach me the important phrases. Like "sorry" and "where's the bar".
ANA: I've started something too. Guitar lessons, since the middle of August. A teacher comes to the flat on Thursdays. [[c1_guitar]]
BEN: Acoustic or electric?
ANA: Acoustic. My fingertips are in pieces.
BEN: What does Biscuit think?
ANA: He howls along. He thinks it's a duet. How's the knee, ready for running yet?
BEN: Yes! I started jogging again last week. Just 5k, slowly, twice a week. [[c1_jog_again]]
ANA: The comeback!
BEN: No more marathons though. I promised Maya. [[c1_no_marathon]]
ANA: Are you still swimming?
BEN: Once a week, on Sundays. I got used to it.
ANA: And Lisbon's back on for me. Carla's wrist is healed and we're going in October instead. [[c1_lisbon_oct]]
BEN: Fourth time lucky.
== 2023-11-19
ANA: Lisbon was everything. Carla cried at the view from the castle.
BEN: Did you eat the custard tarts?
ANA: Eleven. I counted. Everything else was a challenge, so much seafood, but I managed. [[c1_lisbon_food]]
BEN: That's the vegetarian with an allergy struggle.
ANA: I mostly lived on bread and cheese. No complaints. [[c1_bread]]
BEN: Pepper had a rough month. She had three teeth out at the vet last week. [[c1_pepper_teeth]]
ANA: Poor girl! Is she eating?
BEN: Wet food only, and she's sulking, but yes.
ANA: Biscuit turned one on Tuesday. I made him a carrot cake with dog-safe icing. [[c1_biscuit_birthday]]
BEN: Of course you did.
ANA: I was thinking of getting him a brother, a second beagle. But I've decided against it. One is plenty in a flat this size. [[c1_no_second_dog]]
BEN: Sensible. Two beagles would eat the whole sofa.
ANA: How are day shifts?
BEN: I love them. I sleep at night like a normal person, and I've been cooking dinner for Maya. [[c1_cooking]]
ANA: What do you cook?
BEN: Pasta, mostly. Anything without olives, I can't stand olives. [[c1_olives]]
ANA: I remember. You picked every one off my pizza in second year.
BEN: And the guitar?
ANA: Still going. I can play three songs badly. My teacher says I'm ready for a bigger one. [[c1_three_songs]]
BEN: How's Carla?
ANA: Thinking about moving to London next year. She might, she's not sure yet, it depends on a job. [[c1_carla_move]]
BEN: Play at the wedding.
ANA: Absolutely not.
BEN: Worth a try.
""",
        obs="""
Ana | Ana adopted a beagle puppy named Biscuit from a rescue in Hackney. | c1_biscuit
Ben | Ben has a nine-year-old cat named Pepper who has never met a dog. | c1_pepper
Ana | Ana works at a design agency and can bring her dog to the studio on Fridays. | c1_agency
Ben | Ben works night shifts, four on and three off, in January. | c1_nights
Ben | Ben signed up for the Manchester marathon in April and runs forty miles a week. | c1_marathon
Ben | Ben's girlfriend Maya loves seafood. | c1_maya_seafood
Ana | Ana is allergic to shellfish and carries an EpiPen. | c1_shellfish c1_epipen
Ana | Ana has been vegetarian for about five years. | c1_veggie_q c1_veggie
Ana | Ana started pottery classes on Wednesday evenings in Dalston. | c1_pottery_start
Ben | Ben is learning Spanish on an app for twenty minutes a day. | c1_spanish_start
Ben | Ben is learning Spanish because Maya's family is from Valencia. | c1_maya_valencia
Ben | Ben hurt his knee on a long run and cannot run for at least eight weeks. | c1_knee c1_no_running
Ben | Ben withdrew from the Manchester marathon after his knee injury. | c1_marathon_out_q c1_marathon_out
Ana | Ana booked a five-day trip to Lisbon in May with her sister Carla. | c1_lisbon_booked c1_carla
Ben | Ben started swimming three mornings a week in April. | c1_swim_start
Ana | Ana quit pottery classes because her teacher moved away and they cost too much. | c1_pottery_quit c1_pottery_cost
Ana | Ana's dog Biscuit chewed a corner off her sofa. | c1_sofa
Ana | Ana cancelled the Lisbon trip after Carla broke her wrist. | c1_lisbon_cancel
Ana | Ana might rebook Lisbon in the autumn, but nothing is fixed. | c1_lisbon_maybe_q c1_lisbon_maybe
Ben | Ben gave up coffee at the start of May because he was not sleeping. | c1_coffee_quit c1_coffee_why
Ben | Ben drinks peppermint tea instead of coffee. | c1_peppermint_q c1_peppermint
Ana | Ana left the agency and has been freelance since 1 June. | c1_freelance
Ana | Ana wants to do branding for small businesses. | c1_branding
Ana | Ana hates horror films and has not watched one since she was twelve. | c1_horror
Ben | Ben loves horror films. | c1_ben_horror
Ben | Ben is an A&E nurse. | c1_nurse
Ben | Ben got engaged to Maya after proposing at Buttermere in the Lake District. | c1_engaged
Ana | Ana took Biscuit to St Ives in Cornwall for a long weekend in June. | c1_cornwall
Ana | Ana does not drive; she never learned. | c1_no_drive
Ana | Ana's first freelance client was a bakery in Walthamstow that hired her for a logo and packaging. | c1_bakery_maybe c1_bakery
Ben | Ben is still not running; his physio wants him swimming until September. | c1_swim_continue
Ben | Ben and Maya will marry on 8 June next year in Valencia. | c1_wedding_date
Ben | Ben is moving from night shifts to day shifts in October. | c1_day_shifts
Ben | Ben stopped learning Spanish after losing a 173-day streak at the start of August. | c1_spanish_stop
Ana | Ana has taken acoustic guitar lessons at home on Thursdays since mid-August. | c1_guitar
Ben | Ben started jogging again, 5k twice a week. | c1_jog_again
Ben | Ben will not run another marathon; he promised Maya. | c1_no_marathon
Ana | Ana rebooked Lisbon with Carla for October. | c1_lisbon_oct
Ana | Ana went to Lisbon and mostly ate bread and cheese because of all the seafood. | c1_lisbon_food c1_bread
Ben | Ben's cat Pepper had three teeth removed at the vet. | c1_pepper_teeth
Ana | Ana's beagle Biscuit turned one in November. | c1_biscuit_birthday
Ana | Ana decided not to get a second dog. | c1_no_second_dog
Ben | Ben sleeps at night and cooks dinner for Maya since moving to day shifts. | c1_cooking
Ben | Ben can't stand olives. | c1_olives
Ana | Ana is not a fan of Valentine's Day and prefers a takeaway at home over a fancy dinner. | c1_not_fan_valentines
Ben | Ben swims front crawl because breaststroke hurts his knee. | c1_crawl
Ben | Ben used to hate the pool but now never skips a swimming session. | c1_never_skip
Ana | Ana's mum offered to look after Biscuit during the Lisbon trip. | c1_mum_biscuit
Ben | Ben and Maya watched a new horror film set in a lighthouse. | c1_lighthouse
Ben | Ben dropped the ring in the grass when he proposed. | c1_ring
Ana | Ana can play three songs on the guitar. | c1_three_songs
Ana | Ana's sister Carla might move to London next year but is not sure yet. | c1_carla_move
Ana | Ana's original Lisbon trip was from 18 to 23 May. | c1_lisbon_dates_q c1_lisbon_dates
Ben | Ben had a seventy-seven-day Spanish streak in April. | c1_streak77
""",
        qs="""
s | What is the name of Ana's dog? | Biscuit | c1_biscuit
s | What breed is Ana's dog? | a beagle | c1_biscuit
s | What is Ben's cat called? | Pepper | c1_pepper
s | Which marathon did Ben sign up for? | the Manchester marathon | c1_marathon
s | What is Ana allergic to? | shellfish | c1_shellfish
s | Where are Maya's family from? | Valencia | c1_maya_valencia
s | Why is Ben learning Spanish? | to talk to Maya's Spanish-speaking family, her grandmother especially | c1_maya_valencia
s | Which city did Ana plan to visit with her sister in May? | Lisbon | c1_lisbon_booked
s | What did Biscuit chew? | a corner of Ana's sofa | c1_sofa
s | Why did Ana cancel the Lisbon trip? | her sister Carla broke her wrist | c1_lisbon_cancel
s | What does Ben drink instead of coffee? | peppermint tea | c1_peppermint_q c1_peppermint
s | Who was Ana's first freelance client? | a bakery in Walthamstow | c1_bakery_maybe c1_bakery
s | Where did Ben propose to Maya? | at Buttermere in the Lake District | c1_engaged
s | Where is Ben's wedding going to be? | in Valencia | c1_wedding_date
s | What instrument is Ana learning? | acoustic guitar | c1_guitar
s | What happened to Pepper at the vet? | she had three teeth removed | c1_pepper_teeth
s | What food can Ben not stand? | olives | c1_olives
s | What kind of work does Ana want to do as a freelancer? | branding for small businesses | c1_branding
s | How did Ana get to Cornwall? | by train to St Erth and then a bus | c1_no_drive
m | Why did Ana mostly eat bread and cheese in Lisbon? | she is vegetarian and allergic to shellfish, and the food was mostly seafood | c1_lisbon_food c1_bread c1_shellfish c1_veggie_q c1_veggie
m | Which of Ana's Valentine's suggestions could she not eat at herself, and why? | the oyster place, because she is allergic to shellfish | c1_shellfish c1_maya_seafood
m | What exercise did Ben take up after his knee injury? | swimming | c1_knee c1_swim_start
m | Which two trips with her sister did Ana book to Lisbon, and which one happened? | May (cancelled) and October (went) | c1_lisbon_booked c1_lisbon_cancel c1_lisbon_oct
m | Why did Ben stop running and what made him start again? | a knee injury on a long run; after months of swimming the knee healed and he started jogging 5k twice a week | c1_knee c1_swim_start c1_jog_again
m | What two reasons did Ana give for quitting pottery? | her teacher moved to Bristol and it cost eighty pounds a month | c1_pottery_quit c1_pottery_cost
m | What did Ben give up for his sleep, and what changed at work that helps him sleep? | coffee; he moved to day shifts and now sleeps at night | c1_coffee_quit c1_coffee_why c1_day_shifts c1_cooking
m | What pets do the two friends have? | Ana has a beagle called Biscuit; Ben has a cat called Pepper | c1_biscuit c1_pepper
t | When did Ana adopt Biscuit? | on Saturday 7 January 2023 (the Saturday before 14 January 2023) | c1_biscuit
t | When did Ben hurt his knee? | on Sunday 19 March 2023 | c1_knee
t | Since when has Ben not drunk coffee? | since 1 May 2023 | c1_coffee_why
t | When did Ana become freelance? | on 1 June 2023 | c1_freelance
t | When did Ben propose to Maya? | on Saturday 8 July 2023 | c1_engaged
t | When is Ben's wedding? | 8 June 2024 | c1_wedding_date
t | When did Ana start guitar lessons? | in mid-August 2023 | c1_guitar
t | When does Ben start day shifts? | in October 2023 | c1_day_shifts
t | How long had Ben been swimming by late April 2023? | since the start of April, about four weeks | c1_swim_start
t | Did Ana start pottery before or after Ben hurt his knee? | before: she started in February, he hurt his knee in March | c1_pottery_start c1_knee
t | When did Ana go to Cornwall? | in June 2023, the week after she went freelance | c1_cornwall
t | When did Biscuit turn one? | on Tuesday 14 November 2023 | c1_biscuit_birthday
t | When did Ben start jogging again after his injury? | in the week before 5 September 2023 | c1_jog_again
t | What were the original dates of Ana's Lisbon trip? | 18 to 23 May 2023 | c1_lisbon_dates_q c1_lisbon_dates
n | Does Ana drive? | no, she never learned | c1_no_drive
n | Does Ben still drink coffee? | no, he gave it up in May 2023 | c1_coffee_quit
n | Does Ana still go to pottery classes? | no, she quit in April 2023 | c1_pottery_quit
n | Is Ben still learning Spanish? | no, he stopped in August after losing his streak | c1_spanish_stop
n | Does Ana eat fish? | no, she is vegetarian and allergic to shellfish | c1_veggie_q c1_veggie c1_shellfish
n | Does Ana watch horror films? | no, not since she was twelve | c1_horror
n | Is Ana getting a second dog? | no, she decided against it | c1_no_second_dog
n | Did Ben run the Manchester marathon? | no, he withdrew after hurting his knee | c1_marathon_out_q c1_marathon_out
n | Will Ben run another marathon? | no, he promised Maya | c1_no_marathon
n | What does Ben leave off his food? | olives | c1_olives
n | Did Ana go to Lisbon in May? | no, the trip was cancelled | c1_lisbon_cancel
a | What is the name of Ana's cat? | not mentioned | 
a | When did Ben adopt a dog? | not mentioned | 
a | Which marathon did Ana run? | not mentioned | 
a | What did Ana make in her woodwork class? | not mentioned | 
a | When did Ana's sister Carla get married? | not mentioned | 
a | Which car does Ben drive? | not mentioned | 
a | What did Ben and Maya name their baby? | not mentioned | 
a | Why did Ana move to Bristol? | not mentioned | 
o | When did Ben adopt a beagle? | not mentioned | c1_biscuit
o | Which hospital department does Ana work in as a nurse? | not mentioned | c1_nurse
o | When did Ana get engaged? | not mentioned | c1_engaged
o | When did Ana give up coffee? | not mentioned | c1_coffee_quit
o | How did Ana hurt her knee? | not mentioned | c1_knee
o | What instrument is Ben learning? | not mentioned | c1_guitar
o | Which bakery hired Ben? | not mentioned | c1_bakery
o | Why did Ben quit pottery? | not mentioned | c1_pottery_quit
o | What language is Ana learning on an app? | not mentioned | c1_spanish_start
s | Where did Ana suggest Ben take Maya for Valentine's Day? | the oyster place on Exmouth Market | c1_maya_seafood c1_shellfish
s | Where did Ana take pottery classes? | the community studio in Dalston | c1_pottery_start
s | Who was going to look after Biscuit during the Lisbon trip? | Ana's mum | c1_mum_biscuit
s | What did Ben drop when he proposed? | the ring, in the grass | c1_ring
s | What did Ana make for Biscuit's first birthday? | a carrot cake with dog-safe icing | c1_biscuit_birthday
s | How many custard tarts did Ana eat in Lisbon? | eleven | c1_lisbon_food
s | What did the physio think was wrong with Ben's knee? | a strained ligament | c1_no_running
s | Which stroke does Ben swim and why? | front crawl, because breaststroke hurts his knee | c1_crawl
s | Which horror film did Ben and Maya watch? | a new one set in a lighthouse | c1_lighthouse
m | Which sports did Ben do over the year, in order? | marathon training, then swimming from April after his knee injury, then jogging again from late August | c1_marathon c1_swim_start c1_jog_again
m | Who is Carla and what happened to her wrist? | Ana's sister; she broke her wrist falling off her bike | c1_carla c1_lisbon_cancel
t | How long was Ben told not to run after his injury? | at least eight weeks | c1_no_running
t | How long was Ben's Spanish streak when it ended? | 173 days | c1_spanish_stop
t | How old was Pepper in January 2023? | nine | c1_pepper
n | Does Ana like Valentine's Day dinners? | no, she is not a fan; she prefers a takeaway on the sofa | c1_not_fan_valentines
n | Does Ben skip his swimming sessions? | no, he never skips one | c1_never_skip
n | Is Carla definitely moving to London? | no, she might, she is not sure yet | c1_carla_move
n | Does Ben swim breaststroke? | no, it hurts his knee, so he swims front crawl | c1_crawl
a | What did Ana buy in Valencia? | not mentioned | 
a | Which guitar teacher did Ben hire? | not mentioned | 
o | What is the name of Ben's sister? | not mentioned | c1_carla
o | When did Biscuit have three teeth removed? | not mentioned | c1_pepper_teeth
o | What does Ana cook for Maya? | not mentioned | c1_cooking
o | When did Ben take Biscuit to Cornwall? | not mentioned | c1_cornwall
o | Which horror film did Ana watch with Maya? | not mentioned | c1_lighthouse
t | How long was Ben's Spanish streak at the end of April? | seventy-seven days | c1_streak77
""",
    )
)


# c2: a sister and a brother, a teacher in Leeds and a developer in Manchester ------------------------
CONVS.append(
    dict(
        id="c2",
        speakers=("Priya", "Dev"),
        relation="sister and brother",
        script="""
== 2022-02-06
DEV: Are you awake? I need to moan about work.
PRIYA: It's Sunday morning and I have a seven-year-old. I've been awake since six.
DEV: Kestrel is a mess. There are rumours about layoffs and nobody in management will say anything. [[c2_kestrel]]
PRIYA: Kestrel is the payments startup?
DEV: Yeah. I've been a backend developer there for three years and I've never seen people this quiet. [[c2_dev_job]]
PRIYA: Start updating your CV, just in case. Better safe.
DEV: I know. How's the teaching?
PRIYA: Year 10 chemistry set fire to a worksheet on Friday. Nobody hurt. Just pride. [[c2_chem]]
DEV: Only you would say that calmly.
PRIYA: Fifteen years in a classroom. Also, I've signed up for the Leeds half marathon in May. [[c2_half]]
DEV: You hate running!
PRIYA: I hated running. Now I'm doing three runs a week with a plan on my fridge. [[c2_runs]]
DEV: Who are you and what have you done with my sister.
PRIYA: Arjun keeps asking for violin lessons, by the way. He saw someone play at school assembly. [[c2_violin_ask]]
DEV: Get him some! Tell him Uncle Dev will come to every concert.
PRIYA: You say that now.
DEV: In other news, I've made a sourdough starter. His name is Gerald. [[c2_gerald]]
PRIYA: Of course he has a name.
DEV: He lives on top of the fridge and he smells like beer.
PRIYA: Send me a loaf when he's ready.
DEV: First I need one that isn't a brick.
== 2022-03-13
DEV: Well, it happened. They let go of a third of us on Thursday. I'm one of them. [[c2_laid_off]]
PRIYA: Oh, Dev. I'm so sorry. Are you okay?
DEV: Weirdly relieved. The waiting was worse. I get two months' pay. [[c2_severance]]
PRIYA: That's something. What will you do?
DEV: I'm thinking of going freelance. A few ex-colleagues say they can pass work my way.
PRIYA: You'd be good at that. You hate meetings anyway.
DEV: I do hate meetings. I've also cancelled my gym membership, sixty quid a month I don't need to spend right now. [[c2_gym_cancel]]
PRIYA: Sensible. Run with me instead.
DEV: Never. I'm not keen on running, I'd take a bike over trainers any day. [[c2_dev_bike]]
PRIYA: Speaking of food, I had a disaster at Tom's work dinner. Everything came with cream sauce.
DEV: Your stomach?
PRIYA: Yep. Lactose intolerant and a set menu. I ate bread rolls for dinner. [[c2_lactose]]
DEV: You should always call ahead.
PRIYA: I did! They forgot. Anyway. Have you talked to Mum this week?
DEV: Yesterday. Her hip is worse. She can barely do the stairs now. [[c2_mum_hip]]
PRIYA: She told me she's on the waiting list for a replacement, but nobody knows how long. [[c2_waitlist]]
DEV: I'm the one nearby. I'll take her to her appointments, I've got nothing but time now.
PRIYA: Thank you. I'll come down on weekends when I can.
DEV: Gerald made a decent loaf by the way. Only slightly a brick.
PRIYA: Progress!
== 2022-04-24
PRIYA: How's freelance life?
DEV: Three weeks in. I started on the first of April and I've got my first client: a children's charity that needs their website rebuilt. [[c2_freelance]]
PRIYA: That's brilliant. Is it paying?
DEV: Not as much as Kestrel, but enough for now. I work from the kitchen table in my pyjamas.
PRIYA: Living the dream. Arjun started violin! Tuesday lessons after school. [[c2_violin_start]]
DEV: How does it sound?
PRIYA: Like a cat in a blender. He loves it though, practises every evening. [[c2_practise]]
DEV: Record it for me. I want blackmail material for his wedding.
PRIYA: The half is three weeks away and I did ten miles yesterday. [[c2_ten_miles]]
DEV: Ten miles! Without stopping?
PRIYA: I stopped for a wee. Otherwise yes.
DEV: Felix and I have been talking about a trip. Japan, in October. [[c2_japan_plan]]
PRIYA: How long has it been with Felix now, a year?
DEV: Fourteen months. Felix is the one, Priya. [[c2_felix]]
PRIYA: I'm so happy for you. Japan sounds amazing.
DEV: You and Tom should come!
PRIYA: You know I don't fly. Twelve hours in a metal tube is never happening. [[c2_no_fly]]
DEV: Still? Even after therapy?
PRIYA: The therapy got me onto the Eurostar. That's the limit. [[c2_eurostar]]
DEV: Fair enough. We'll bring you back a kimono.
== 2022-05-22
PRIYA: I DID IT. I ran the whole half, a week ago today. Two hours and five minutes. [[c2_half_done]]
DEV: PRIYA! I saw the photos. You look like you're dying in all of them.
PRIYA: I was dying. But I finished. Arjun made a sign.
DEV: What did it say?
PRIYA: "Go Mummy, you are not last". He was very proud of the last bit. [[c2_sign]]
DEV: He's not wrong. Are you going to do another? [[c2_maybe_another_q]]
PRIYA: Not sure. My knees are ninety years old this week. Maybe, maybe not. [[c2_maybe_another]]
DEV: Gerald has finally made an actual good loaf. Open crumb and everything. [[c2_good_loaf]]
PRIYA: Bring one when you come up.
DEV: Felix and I had dinner at that new Thai place. Everything was covered in coriander. [[c2_coriander_dinner]]
PRIYA: Your nemesis.
DEV: It tastes like soap to me. I had to send my curry back. [[c2_coriander]]
PRIYA: You've hated it since you were five. Mum used to pick it out for you. [[c2_coriander_five]]
DEV: Mum, by the way: her surgery is booked. The twentieth of June at St James's. [[c2_surgery_date]]
PRIYA: Finally! I'll take that week off. It's half term anyway? No, it isn't. I'll sort something.
DEV: I'll drive her in. You come for the weekend after.
PRIYA: Deal.
DEV: How's the violin?
PRIYA: Less blender, more cat.
DEV: Improving then.
== 2022-06-26
DEV: Mum's home! She's already telling the physio she doesn't need the frame.
PRIYA: How did the surgery go on Monday? She told me everything was fine but she always says that.
DEV: It genuinely went well. I drove her in at seven, the surgeon said it was textbook. [[c2_surgery_done]]
PRIYA: Thank you for being there. I'll be down on Saturday with Arjun.
DEV: She'll love that. Also, news: Felix and I are moving in together. His flat, in Didsbury, from the middle of July. [[c2_move_in]]
PRIYA: That's big! What about his cat? Aren't you allergic? [[c2_cat_allergy_q]]
DEV: Horribly. My eyes swell up within an hour. [[c2_cat_allergy]]
PRIYA: So what happens to Mochi? [[c2_mochi_name]]
DEV: His sister is taking her. Felix is sad but he says it's fine, she'll be spoiled rotten there. [[c2_mochi]]
PRIYA: That's love, giving up the cat.
DEV: I've promised him a dog one day. A non-allergenic one. If those even exist.
PRIYA: Poodles, I think. Arjun wants one too.
DEV: How's he doing?
PRIYA: Violin exam in July. Grade one. He's nervous. [[c2_grade1]]
DEV: Tell him Uncle Dev says good luck.
PRIYA: Any more freelance work?
DEV: The charity liked the website and referred me to another one. So I'm busy till September. [[c2_referral]]
PRIYA: Brilliant. And are you going to the gym again now you're earning? [[c2_no_gym_q]]
DEV: No, I've kept it cancelled. I walk everywhere instead. [[c2_no_gym]]
PRIYA: Very Manchester of you.
== 2022-08-14
PRIYA: We're in! Moved into the new house in Headingley last weekend. Boxes everywhere. [[c2_headingley]]
DEV: Finally! Does Arjun have a bigger room?
PRIYA: He does, and he's already painted a dinosaur on the wall without permission.
DEV: Legend. Bad news from me: we've cancelled Japan. [[c2_japan_cancel]]
PRIYA: Oh no, why?
DEV: Money. Freelance has been slow in the summer and the flights went up again. Maybe next year. [[c2_japan_why]]
PRIYA: I'm sorry. That was a big dream.
DEV: We're doing something smaller instead. Hiking on the Isle of Skye in September. [[c2_skye_plan]]
PRIYA: Bring midge spray. I mean it.
DEV: How did the grade one go?
PRIYA: He passed with merit! And then he told me he wants to stop violin and play drums instead. [[c2_violin_stop]]
DEV: Ha! Drums in the new house. Your husband must be thrilled. [[c2_husband]]
PRIYA: Tom is already looking at soundproofing. We said yes to drum lessons from September if he still wants it. [[c2_tom]]
DEV: Are you still running?
PRIYA: Honestly, no. I haven't run since the half. The plan came off the fridge in June. [[c2_run_stop]]
DEV: You earned a rest.
PRIYA: I'm thinking about yoga. Less pounding on the knees.
DEV: How's Mum's hip? [[c2_mum_walk_q]]
PRIYA: She walked to the shops on her own on Tuesday. No stick. [[c2_mum_walk]]
DEV: She's bionic now.
== 2022-09-25
PRIYA: Big news. I'm head of the science department from this term. [[c2_head_dept]]
DEV: Congratulations! Does that mean more money or just more meetings?
PRIYA: Both. Mostly meetings.
DEV: Skye was incredible, by the way. We climbed the Old Man of Storr in the rain. [[c2_skye_done]]
PRIYA: Did the midges get you?
DEV: I look like a join-the-dots puzzle.
PRIYA: We need to talk about Dad's seventieth. It's the 22nd of October. [[c2_dad70]]
DEV: Mum wants a restaurant. Dad says he wants "no fuss". [[c2_no_fuss]]
PRIYA: Dad always says that and then sulks if there's no fuss.
DEV: True. What about the community hall near them? Food, music, his old band friends. [[c2_hall_idea]]
PRIYA: Perfect. I'll book the hall, you do the food. [[c2_hall]]
DEV: Deal. I can do it without a single leaf of coriander.
PRIYA: Still baking bread?
DEV: Tragedy. Gerald died while we were in Skye. Nobody fed him. I haven't made a new starter. [[c2_gerald_dead]]
PRIYA: RIP Gerald.
DEV: Work's picked up though. I've got a three-month contract with a bank from October. Good money. [[c2_bank]]
PRIYA: Any more talk of Japan? [[c2_japan_spring_q]]
DEV: Maybe in spring. We'll see how the bank contract goes. [[c2_japan_spring]]
PRIYA: Arjun started drums last week. I'm wearing earplugs at home. [[c2_drums_start]]
DEV: Ha. Karma for my Christmas recorder.
== 2022-10-30
PRIYA: Dad's still talking about the party.
DEV: He cried during your speech. I've never seen him cry. [[c2_speech_q]]
PRIYA: He said it was the onions. There were no onions. [[c2_speech]]
DEV: The band was amazing. I didn't know Dad still played the saxophone. [[c2_sax_q]]
PRIYA: He doesn't, not really. He hadn't picked it up in twenty years. He practised for a month for that one song. [[c2_dad_sax]]
DEV: Still counts.
PRIYA: Why weren't you drinking at the party? I noticed.
DEV: I've stopped drinking for a while. I did a dry October and felt so much better I'm keeping going. [[c2_no_alcohol]]
PRIYA: Good for you. How long for?
DEV: No idea. Maybe till Christmas, maybe forever.
PRIYA: I've started yoga, by the way. Monday nights at a studio round the corner. [[c2_yoga]]
DEV: And your knees are grateful.
PRIYA: Very. Christmas at ours this year? We finally have room.
DEV: Yes please. Felix too?
PRIYA: Obviously. Tell him I'll make everything without cream so I can eat it as well. [[c2_xmas_cream]]
DEV: Lactose-free Christmas. Groundbreaking.
PRIYA: And I won't put coriander in anything. [[c2_xmas_coriander]]
DEV: Truly my sister.
PRIYA: The bank job? [[c2_bank_start_q]]
DEV: Started on the third. Suits and everything. I miss my pyjamas. [[c2_bank_start]]
""",
        obs="""
Dev | Dev is a backend developer at Kestrel, a payments startup, and has worked there for three years. | c2_kestrel c2_dev_job
Priya | Priya is a chemistry teacher who has taught for fifteen years. | c2_chem c2_half
Priya | Priya signed up for the Leeds half marathon in May and runs three times a week. | c2_half c2_runs
Priya | Priya's son Arjun asked for violin lessons. | c2_violin_ask
Dev | Dev made a sourdough starter named Gerald. | c2_gerald
Dev | Dev was laid off from Kestrel and got two months' pay. | c2_laid_off c2_severance
Dev | Dev cancelled his gym membership to save money. | c2_gym_cancel
Priya | Priya is lactose intolerant. | c2_lactose
Priya | Priya and Dev's mother needs a hip replacement and is on a waiting list. | c2_mum_hip c2_waitlist
Dev | Dev has been freelance since 1 April; his first client is a children's charity. | c2_freelance
Priya | Priya's son Arjun started violin lessons on Tuesdays. | c2_violin_start
Dev | Dev and his boyfriend Felix are planning a trip to Japan in October. | c2_japan_plan
Dev | Dev has been with Felix for fourteen months. | c2_felix
Priya | Priya does not fly; therapy only got her onto the Eurostar. | c2_no_fly c2_eurostar
Priya | Priya ran the Leeds half marathon in two hours and five minutes. | c2_half_done
Priya | Priya is not sure whether she will run another half marathon. | c2_maybe_another_q c2_maybe_another
Dev | Dev hates coriander; it tastes like soap to him. | c2_coriander_dinner c2_coriander
Dev | Dev has hated coriander since he was five. | c2_coriander_five
Priya | Priya ran ten miles in training three weeks before the half marathon. | c2_ten_miles
Dev | Dev's sourdough starter finally made a good loaf with an open crumb. | c2_good_loaf
Dev | Dev's mother had her hip surgery on 20 June and Dev drove her in. | c2_surgery_date c2_surgery_done
Dev | Dev is moving in with Felix in Didsbury in mid-July. | c2_move_in
Dev | Dev is allergic to cats; his eyes swell up within an hour. | c2_cat_allergy_q c2_cat_allergy
Dev | Felix's cat Mochi went to live with Felix's sister because of Dev's allergy. | c2_mochi_name c2_mochi
Priya | Priya's son Arjun has a grade one violin exam in July. | c2_grade1
Dev | Dev's charity client referred him to another charity, keeping him busy until September. | c2_referral
Dev | Dev has not rejoined the gym; he walks everywhere instead. | c2_no_gym_q c2_no_gym
Priya | Priya moved into a new house in Headingley in August. | c2_headingley
Dev | Dev and Felix cancelled their Japan trip because of money. | c2_japan_cancel c2_japan_why
Dev | Dev planned a hiking trip to the Isle of Skye in September. | c2_skye_plan
Priya | Priya's son Arjun passed grade one violin with merit, then stopped violin for drums. | c2_violin_stop
Priya | Priya has not run since the half marathon in May. | c2_run_stop
Priya | Priya became head of the science department in September. | c2_head_dept
Dev | Dev climbed the Old Man of Storr on Skye in the rain. | c2_skye_done
Priya | Priya is booking the community hall for her father's seventieth birthday on 22 October. | c2_dad70 c2_hall_idea c2_hall
Priya | Priya will cook Christmas without cream and without coriander. | c2_xmas_cream c2_xmas_coriander
Dev | Dev's sourdough starter Gerald died and he has not made a new one. | c2_gerald_dead
Dev | Dev has a three-month contract with a bank from October. | c2_bank
Dev | Dev started his bank contract on 3 October. | c2_bank_start_q c2_bank_start
Dev | Dev might go to Japan in the spring. | c2_japan_spring_q c2_japan_spring
Priya | Priya gave a speech at her father's seventieth that made him cry. | c2_speech_q c2_speech
Priya | Priya's father played the saxophone at his party after twenty years without playing. | c2_sax_q c2_dad_sax
Dev | Dev stopped drinking alcohol after a dry October. | c2_no_alcohol
Priya | Priya started yoga on Monday nights. | c2_yoga
Dev | Dev is not keen on running and would rather cycle. | c2_dev_bike
Priya | Priya's son Arjun practised violin every evening in April. | c2_practise
Priya | Priya's husband is called Tom. | c2_husband c2_tom
Priya | Priya's mother walked to the shops on her own without a stick in August. | c2_mum_walk_q c2_mum_walk
Priya | Priya's father said he wanted no fuss for his seventieth; her mother wanted a restaurant. | c2_no_fuss
Priya | Priya's son Arjun started drum lessons in September. | c2_drums_start
Priya | Priya's son Arjun made a sign for her race saying "Go Mummy, you are not last". | c2_sign
""",
        qs="""
s | What is the name of the startup Dev worked for? | Kestrel | c2_kestrel
s | What subject does Priya teach? | chemistry | c2_chem
s | What did Dev name his sourdough starter? | Gerald | c2_gerald
s | Which race did Priya sign up for? | the Leeds half marathon | c2_half
s | What is Priya intolerant to? | lactose | c2_lactose
s | What operation does Dev and Priya's mother need? | a hip replacement | c2_mum_hip c2_waitlist
s | Who was Dev's first freelance client? | a children's charity that needed its website rebuilt | c2_freelance
s | What is Dev's boyfriend called? | Felix | c2_felix
s | What was Priya's half marathon time? | two hours and five minutes | c2_half_done
s | What does coriander taste like to Dev? | soap | c2_coriander
s | What was the name of Felix's cat? | Mochi | c2_mochi_name c2_mochi
s | Where did Dev and Felix move in together? | Felix's flat in Didsbury | c2_move_in
s | Which instrument did Arjun switch to after violin? | drums | c2_violin_stop
s | Which neighbourhood did Priya move to? | Headingley | c2_headingley
s | Where did Dev go hiking instead of Japan? | the Isle of Skye | c2_skye_plan
s | What job did Priya get in September? | head of the science department | c2_head_dept
s | What instrument did Priya's dad play at his party? | the saxophone | c2_sax_q c2_dad_sax
s | Where was Dad's seventieth held? | a community hall near the parents | c2_hall_idea c2_hall
s | How far did Priya run in training three weeks before the half marathon? | ten miles | c2_ten_miles
s | Why did Dev send his curry back at the Thai place? | it was covered in coriander, which tastes like soap to him | c2_coriander_dinner c2_coriander
s | How long was Dev's freelance work booked up after the referral? | until September | c2_referral
s | What exercise did Priya take up in the autumn? | yoga on Monday nights | c2_yoga
s | What grade did Arjun get in his violin exam? | a merit in grade one | c2_violin_stop
m | Why did Felix's cat go to live with his sister? | because Dev is allergic to cats and was moving in with Felix | c2_cat_allergy_q c2_cat_allergy c2_mochi_name c2_mochi c2_move_in
m | Why did Dev cancel his gym membership and has he rejoined? | to save money after being laid off; no, he walks everywhere instead | c2_gym_cancel c2_no_gym_q c2_no_gym
m | What happened to Dev's sourdough starter while he was hiking? | Gerald died on the Skye trip because nobody fed him | c2_gerald_dead c2_skye_plan
m | What food restrictions did Priya plan Christmas around? | her own lactose intolerance and Dev's dislike of coriander: nothing with cream, no coriander | c2_lactose c2_coriander c2_xmas_cream c2_xmas_coriander
m | How did Arjun's music lessons change over the year? | violin from April, grade one with merit in July, then drums from September | c2_violin_start c2_violin_stop
m | What made Dev's Japan trip fall through and what did he do instead? | slow freelance work and higher flight prices; a hiking trip to Skye | c2_japan_why c2_skye_plan
m | Who drove Dev's mother to her hip surgery and why was he free to? | Dev; he had been laid off and was freelancing | c2_surgery_done c2_laid_off
t | When was Dev laid off? | Thursday 10 March 2022 | c2_laid_off
t | When did Dev start freelancing? | 1 April 2022 | c2_freelance
t | When did Priya run the half marathon? | Sunday 15 May 2022 | c2_half_done
t | When was the mother's hip surgery? | 20 June 2022 | c2_surgery_date
t | When did Dev move in with Felix? | in the middle of July 2022 | c2_move_in
t | When did Priya move to Headingley? | the weekend of 6-7 August 2022 | c2_headingley
t | When was Dad's seventieth birthday? | 22 October 2022 | c2_dad70
t | When did Dev's bank contract start? | 3 October 2022 | c2_bank c2_bank_start_q c2_bank_start
t | How long has Priya been teaching? | fifteen years as of February 2022 | c2_half
t | How long had Dev been with Felix by April 2022? | fourteen months | c2_felix
t | When did Priya last go running? | at the half marathon in May 2022 | c2_run_stop
t | Since when has Dev not drunk alcohol? | since the start of October 2022 (dry October) | c2_no_alcohol
n | Does Priya fly? | no, she doesn't fly; she will take the Eurostar | c2_no_fly c2_eurostar
n | Does Dev eat coriander? | no, he hates it | c2_coriander c2_coriander_five
n | Is Priya still running? | no, not since the half marathon in May | c2_run_stop
n | Does Dev still bake sourdough? | no, Gerald died and he has not made a new starter | c2_gerald_dead
n | Is Dev a member of a gym? | no, he cancelled it and has not rejoined | c2_gym_cancel c2_no_gym_q c2_no_gym
n | Does Arjun still play the violin? | no, he stopped and switched to drums | c2_violin_stop
n | Does Dev drink alcohol now? | no, he stopped after dry October | c2_no_alcohol
n | Did Dev and Felix go to Japan in October? | no, they cancelled it | c2_japan_cancel
n | Can Dev live with a cat? | no, he is allergic to cats | c2_cat_allergy_q c2_cat_allergy
n | Did Priya's dad still play the saxophone regularly? | no, he had not played in twenty years | c2_dad_sax
n | Is Priya sure she will run another half marathon? | no, maybe, maybe not | c2_maybe_another_q c2_maybe_another
a | What is the name of Priya's dog? | not mentioned | 
a | When did Dev get married? | not mentioned | 
a | Which university does Priya teach at? | not mentioned | 
a | What did Dev and Felix buy in Tokyo? | not mentioned | 
a | When did Priya's husband Tom lose his job? | not mentioned | 
a | What breed of dog did Dev adopt? | not mentioned | 
a | What did Arjun name his hamster? | not mentioned | 
o | Which race did Dev run in May? | not mentioned | c2_half_done
o | What is Dev intolerant to? | not mentioned | c2_lactose
o | When did Priya get laid off? | not mentioned | c2_laid_off
o | What did Priya name her sourdough starter? | not mentioned | c2_gerald
o | Which subject does Dev teach? | not mentioned | c2_chem
o | Why is Priya allergic to cats? | not mentioned | c2_cat_allergy_q c2_cat_allergy
o | When did Dev move to Headingley? | not mentioned | c2_headingley
o | When did Priya stop drinking alcohol? | not mentioned | c2_no_alcohol
o | Where did Priya go hiking in September? | not mentioned | c2_skye_done
o | Which studio does Dev go to for yoga? | not mentioned | c2_yoga
s | What is Priya's husband called? | Tom | c2_husband c2_tom
s | What did Arjun's sign at the half marathon say? | "Go Mummy, you are not last" | c2_sign
s | What did Dad blame his tears on at the party? | the onions (there were none) | c2_speech_q c2_speech
s | How much severance did Dev get? | two months' pay | c2_severance
s | How often did Arjun practise violin in April? | every evening | c2_practise
s | How was Dev and Priya's mother walking in August? | she walked to the shops on her own without a stick | c2_mum_walk_q c2_mum_walk
m | What did each parent want for Dad's seventieth, and what did Priya and Dev choose? | Mum a restaurant, Dad no fuss; a party at the community hall | c2_no_fuss c2_hall_idea c2_hall
m | Which of the siblings likes running, and what does the other prefer? | Priya ran a half marathon (and stopped after it); Dev is not keen on running and prefers a bike | c2_half_done c2_dev_bike
t | How long had Dev worked at Kestrel when it started to go wrong? | three years | c2_dev_job
t | When did Arjun start drums? | in the week before 25 September 2022 | c2_drums_start
n | Does Dev like running? | no, he is not keen on it and would rather cycle | c2_dev_bike
n | Did Dad want a fuss for his seventieth? | no, he said he wanted no fuss | c2_no_fuss
a | When did Felix propose to Dev? | not mentioned | 
a | Which hospital did the father have surgery at? | not mentioned | 
o | When did Priya have her hip replacement? | not mentioned | c2_surgery_date c2_surgery_done
o | How did Dev do in his grade one violin exam? | not mentioned | c2_violin_stop
o | When did Dev start drum lessons? | not mentioned | c2_drums_start
""",
    )
)


# c3: two colleagues at a logistics company, a team lead and a data analyst ---------------------------
CONVS.append(
    dict(
        id="c3",
        speakers=("Tomasz", "Grace"),
        relation="colleagues",
        script="""
== 2024-01-15
GRACE: Morning! How was the break? You look weirdly energetic for a Monday.
TOMASZ: I look energetic because I'm chewing nicotine gum. I quit smoking on New Year's Day. [[c3_quit_smoking]]
GRACE: Tomasz, that's amazing. How many years?
TOMASZ: Since I was seventeen. So twenty-two years. Kasia has been asking me to stop since we met. [[c3_kasia]]
GRACE: Two weeks down then. How does it feel?
TOMASZ: Like someone took my personality away. Ask me again in March.
GRACE: I'll bring you carrot sticks.
TOMASZ: Please don't. How was your Christmas?
GRACE: Quiet. I spent most of it on my master's coursework. The regression module is due at the end of the month. [[c3_masters]]
TOMASZ: Remind me, it's the part-time one? Statistics?
GRACE: Yes, evenings and weekends, with the Open University. Two years, I'm halfway. [[c3_masters_ou]]
TOMASZ: I don't know how you do that and a full-time analyst job.
GRACE: Coffee and bouldering. The climbing wall on Tuesdays and Thursdays keeps me sane. [[c3_bouldering]]
TOMASZ: You climb walls for fun and I can barely climb the office stairs.
GRACE: You cycle twelve kilometres to work!
TOMASZ: In summer. In January I'm on the tram like a normal person. [[c3_tram_winter]]
GRACE: Fair. Did the Atlas launch date get confirmed? [[c3_atlas_name]]
TOMASZ: The end of March, supposedly. Management wants the route optimiser live before the spring peak. [[c3_atlas_march]]
GRACE: So my dashboards need to be ready by mid-March.
TOMASZ: Sorry. I'll buy the coffees.
== 2024-02-20
TOMASZ: Can I tell you something before I tell the team?
GRACE: Of course.
TOMASZ: Kasia's pregnant. Baby number two, due in the middle of June. [[c3_baby_due]]
GRACE: Oh congratulations! Does Olek know he's going to be a big brother? [[c3_olek]]
TOMASZ: He's four, so he knows and doesn't care. He wants a dog, not a sister.
GRACE: A sister? You know already?
TOMASZ: We found out at the scan last week. A girl.
GRACE: I'm so happy for you. Will you take paternity leave? [[c3_paternity_q]]
TOMASZ: Two weeks, yes. I already told HR. [[c3_paternity]]
GRACE: Speaking of HR, have you seen the lunch they ordered for the all-hands? Ham sandwiches and tuna.
TOMASZ: And you can't eat any of it.
GRACE: Nothing. I've been vegan for two years and they still forget every time. [[c3_vegan]]
TOMASZ: At least there was no sushi this time. I can't stand raw fish, I don't know how people eat it. [[c3_raw_fish]]
GRACE: Ha. More tofu for me.
TOMASZ: I'll email them. I need to anyway, because the launch is slipping.
GRACE: Atlas? [[c3_atlas_delay_q]]
TOMASZ: The vendor for the mapping data is late. It's May now, not March. [[c3_atlas_delay]]
GRACE: Good, honestly. My dashboards were going to be held together with tape.
TOMASZ: How's the master's?
GRACE: Regression module submitted. Next one is time series. Also, I've started driving lessons. [[c3_driving_lessons]]
TOMASZ: At last! How many?
GRACE: Four so far. I stalled at every roundabout in Salford.
TOMASZ: Everyone stalls in Salford. It's the law.
== 2024-03-27
TOMASZ: Are you coming to the gig on Friday?
GRACE: Which gig?
TOMASZ: My band! The Forklifts. We're playing at the Crown on Friday night. [[c3_band]]
GRACE: I forgot you play bass. How long have you been in the band? [[c3_bass]]
TOMASZ: Six years. Covers only. We're terrible but loud. [[c3_band_years]]
GRACE: I'll come. As long as nobody makes me sing.
TOMASZ: About that, the team wants a karaoke night after the launch.
GRACE: Absolutely not. I hate karaoke. I'd rather do my tax return in public. [[c3_karaoke]]
TOMASZ: You can just watch.
GRACE: I'll come to the dinner, not the singing.
TOMASZ: There's also the offsite. Two days in Brighton in May, for the whole data team. [[c3_brighton_plan]]
GRACE: Brighton! I've never been.
TOMASZ: Don't get excited yet, finance hasn't signed it off.
GRACE: My driving test is on the 16th of April. [[c3_test_date]]
TOMASZ: Nervous?
GRACE: Very. My instructor says I'm ready, I say I'm not.
TOMASZ: You'll be fine. Avoid Salford.
GRACE: Still not smoking?
TOMASZ: Twelve weeks. I had a dream I smoked a whole pack and woke up guilty.
GRACE: That means you're doing it.
== 2024-04-24
TOMASZ: Well? How did it go?
GRACE: I failed. On a roundabout, of course. I didn't check my mirror when I changed lanes. [[c3_test_failed]]
TOMASZ: Oh no. That's rotten luck.
GRACE: The examiner was nice about it. I've rebooked, but the first slot is in August. [[c3_test_rebooked]]
TOMASZ: At least you'll have the summer to practise.
GRACE: How was the Brighton sign-off?
TOMASZ: Cancelled. Finance said no travel budget this year. We're doing a day in the office with pizza instead. [[c3_brighton_cancel]]
GRACE: Vegan pizza, I hope.
TOMASZ: I will personally make sure.
GRACE: And the move? Facilities said May.
TOMASZ: The week after the launch. New office on Canal Street, with a roof terrace and showers for the cyclists. [[c3_new_office]]
GRACE: You'll be happy about the showers.
TOMASZ: My colleagues will be happier.
GRACE: Atlas still on for May? [[c3_atlas_may20_q]]
TOMASZ: The 20th of May. That date does not move, I've told everyone. [[c3_atlas_may20]]
GRACE: Fine. The dashboards are nearly done.
TOMASZ: Good. I had a cigarette craving at the Crown on Friday. Everyone was smoking outside after the gig.
GRACE: Did you have one? [[c3_no_cigarette_q]]
TOMASZ: No. I went home early instead. Four months now. [[c3_no_cigarette]]
GRACE: Proud of you.
== 2024-05-29
GRACE: Atlas is live and nothing is on fire. [[c3_atlas_live_q]]
TOMASZ: Since the 20th and not a single outage. I'm in shock. [[c3_atlas_live]]
GRACE: The drivers like it too. One depot says they're saving an hour a day. [[c3_hour]]
TOMASZ: Your dashboards are the thing the board keeps mentioning, you know. [[c3_dashboards]]
GRACE: Really?
TOMASZ: Really. I'm putting it in your review.
GRACE: Thank you. How's the new office for you?
TOMASZ: The showers are great. The coffee machine is terrible.
GRACE: I like the roof terrace. I ate lunch up there every day this week.
TOMASZ: Did you go to the karaoke?
GRACE: I came to the dinner and left before the microphones came out, as promised. [[c3_skipped_karaoke]]
TOMASZ: Smart. I sang Bohemian Rhapsody. Nobody will ever forget. [[c3_bohemian]]
GRACE: I have news too: I'm moving out of the flatshare. My own place in Ancoats, from the middle of June. [[c3_ancoats]]
TOMASZ: No more flatmates stealing your oat milk?
GRACE: No more. And the landlord allows pets, so I'm getting cats. [[c3_cat_plan]]
TOMASZ: Olek will be so jealous. He's still asking for a dog.
GRACE: Two weeks till the baby?
TOMASZ: About that. Kasia says if the baby is late she's walking to the hospital herself.
GRACE: Go home on time this week.
TOMASZ: I will.
== 2024-07-10
GRACE: Welcome back! Show me pictures immediately.
TOMASZ: Here she is. Zosia, born on the 14th of June. Three point four kilos. [[c3_zosia]]
GRACE: Look at her hair! She has more than you.
TOMASZ: Everyone says that. Olek wanted to call her Spider-Man. [[c3_olek_name]]
GRACE: Close enough. How are you sleeping?
TOMASZ: I'm not. Three hours a night, maybe. I had coffee with sugar this morning and I never take sugar. [[c3_no_sugar]]
GRACE: That's desperation.
TOMASZ: How's the new flat?
GRACE: I love it. And I adopted two cats from a shelter in Salford. Brothers, Miso and Tofu. [[c3_cats]]
TOMASZ: Of course they're called Miso and Tofu.
GRACE: The vegan jokes write themselves.
TOMASZ: Still climbing?
GRACE: Not at the moment. I strained my shoulder on an overhang in June, so no climbing until it's better. [[c3_shoulder]]
TOMASZ: Ouch. Physio?
GRACE: Twice a week. I'm doing swimming instead for now. [[c3_grace_swim]]
TOMASZ: And the master's?
GRACE: Dissertation time. I'm modelling delivery delays against the weather. [[c3_dissertation]]
TOMASZ: Using our data?
GRACE: Anonymised, with permission. Your Atlas logs are gold.
TOMASZ: Glad someone loves them.
== 2024-08-28
GRACE: I PASSED. Second attempt, no faults on the roundabout. [[c3_test_passed]]
TOMASZ: Grace! When?
GRACE: The 15th. I waited to tell you in person, but I can't wait any more. [[c3_test_day]]
TOMASZ: Are you getting a car?
GRACE: Not yet. I'll borrow my dad's when I visit Leeds. In Ancoats I don't need one. [[c3_no_car]]
TOMASZ: Smart. Can I ask you something? The senior analyst role is open. You should apply. [[c3_role_open]]
GRACE: I already did. Last Friday. [[c3_applied]]
TOMASZ: Good. You'll get it.
GRACE: How's the band? You haven't mentioned a gig in ages.
TOMASZ: I left the Forklifts. With a baby and a four-year-old, there's no time for Thursday rehearsals. [[c3_left_band]]
GRACE: That's sad. Six years.
TOMASZ: I still play at home. Zosia falls asleep to my bass lines, it's the only thing that works. [[c3_bass_home]]
GRACE: A bass lullaby. I love it.
TOMASZ: Cycling again, at least. The weather's good and it's the only quiet time I get. [[c3_cycling_summer]]
GRACE: And smoking?
TOMASZ: Still none. Eight months. The sleep deprivation almost got me, but no. [[c3_eight_months]]
GRACE: Dissertation's due on the 20th of September. [[c3_diss_due]]
TOMASZ: Then you're buying drinks.
GRACE: Then I'm sleeping for a week.
== 2024-10-16
TOMASZ: Senior Analyst Grace Liu. How does it sound? [[c3_senior]]
GRACE: Still weird. The letter came on Monday. I start in the new role in November. [[c3_promoted]]
TOMASZ: Well deserved. And the dissertation?
GRACE: Submitted on the 19th of September, a day early. Results in December. [[c3_diss_submitted]]
TOMASZ: A day early! Who are you?
GRACE: Someone who didn't want to do it any more. How are the kids?
TOMASZ: Zosia sleeps five hours in a row now. It feels like a spa. [[c3_five_hours]]
GRACE: And you're back on the tram?
TOMASZ: Since the clocks are about to go back, yes. Cycling in the dark is not for me. [[c3_tram_again]]
GRACE: I'm back on the wall, by the way. Shoulder's fine, started again at the beginning of October. [[c3_climb_again]]
TOMASZ: Careful on the overhangs.
GRACE: Never again on the overhangs. I stick to the slabs. [[c3_slabs]]
TOMASZ: The Christmas party is going to be karaoke again.
GRACE: Then I'm going to the dinner and leaving early again. I will never sing.
TOMASZ: I'll sing for both of us.
GRACE: Any word on a dog for Olek?
TOMASZ: No dog. We said maybe when Zosia is in school. He got a goldfish instead. [[c3_goldfish]]
GRACE: What's the goldfish called?
TOMASZ: Spider-Man. [[c3_spiderman]]
GRACE: Perfect.
""",
        obs="""
Tomasz | Tomasz quit smoking on New Year's Day 2024 after smoking since he was seventeen. | c3_quit_smoking c3_kasia
Grace | Grace is doing a part-time master's in statistics with the Open University, evenings and weekends. | c3_masters c3_masters_ou
Grace | Grace goes bouldering on Tuesdays and Thursdays. | c3_bouldering
Tomasz | Tomasz cycles twelve kilometres to work in summer and takes the tram in winter. | c3_tram_winter
Tomasz | Tomasz's team planned to launch the Atlas route optimiser at the end of March. | c3_atlas_name c3_atlas_march
Tomasz | Tomasz's wife Kasia is pregnant with their second child, a girl due in mid-June. | c3_baby_due
Tomasz | Tomasz has a four-year-old son named Olek. | c3_olek
Tomasz | Tomasz will take two weeks of paternity leave. | c3_paternity_q c3_paternity
Grace | Grace has been vegan for two years. | c3_vegan
Tomasz | Tomasz's Atlas launch slipped from March to May because the mapping vendor was late. | c3_atlas_delay_q c3_atlas_delay
Grace | Grace started driving lessons in February. | c3_driving_lessons
Tomasz | Tomasz plays bass in a covers band called The Forklifts and has for six years. | c3_band c3_bass c3_band_years
Grace | Grace hates karaoke. | c3_karaoke
Grace | Grace's driving test was booked for 16 April. | c3_test_date
Grace | Grace failed her first driving test at a roundabout and rebooked for August. | c3_test_failed c3_test_rebooked
Tomasz | Tomasz's team offsite in Brighton was cancelled because finance refused the travel budget. | c3_brighton_plan c3_brighton_cancel
Tomasz | Tomasz's team moved to a new office on Canal Street with showers for cyclists. | c3_new_office
Tomasz | Tomasz did not smoke at a gig despite a craving; four months without cigarettes. | c3_no_cigarette_q c3_no_cigarette
Tomasz | Tomasz's Atlas launch went live on 20 May without an outage. | c3_atlas_may20_q c3_atlas_may20 c3_atlas_live_q c3_atlas_live
Grace | Grace's dashboards are often mentioned by the board. | c3_dashboards
Grace | Grace went to the team dinner but left before the karaoke. | c3_skipped_karaoke
Tomasz | Tomasz sang Bohemian Rhapsody at the team karaoke. | c3_bohemian
Grace | Grace is moving to her own flat in Ancoats in mid-June. | c3_ancoats
Grace | Grace plans to get cats because her new landlord allows pets. | c3_cat_plan
Tomasz | Tomasz's daughter Zosia was born on 14 June. | c3_zosia
Tomasz | Tomasz never takes sugar in his coffee. | c3_no_sugar
Grace | Grace adopted two cats, brothers named Miso and Tofu, from a shelter in Salford. | c3_cats
Grace | Grace strained her shoulder in June and is not climbing until it heals. | c3_shoulder
Grace | Grace is swimming while her shoulder heals. | c3_grace_swim
Grace | Grace's dissertation models delivery delays against the weather. | c3_dissertation
Grace | Grace passed her driving test on the second attempt on 15 August. | c3_test_passed c3_test_day
Grace | Grace is not getting a car; she will borrow her dad's in Leeds. | c3_no_car
Grace | Grace applied for the senior analyst role. | c3_role_open c3_applied
Tomasz | Tomasz left The Forklifts because he has no time with two children. | c3_left_band
Tomasz | Tomasz still plays bass at home, and it helps Zosia fall asleep. | c3_bass_home
Tomasz | Tomasz cycles to work again in the summer. | c3_cycling_summer
Grace | Grace's dissertation was due on 20 September. | c3_diss_due
Grace | Grace was promoted to senior analyst, starting in November. | c3_senior c3_promoted
Grace | Grace submitted her dissertation on 19 September, a day early. | c3_diss_submitted
Tomasz | Tomasz takes the tram again in October because he does not like cycling in the dark. | c3_tram_again
Grace | Grace started bouldering again at the beginning of October. | c3_climb_again
Grace | Grace no longer climbs overhangs; she sticks to slabs. | c3_slabs
Tomasz | Tomasz's son Olek got a goldfish named Spider-Man instead of a dog. | c3_goldfish c3_spiderman
Tomasz | Tomasz can't stand raw fish and does not eat sushi. | c3_raw_fish
Tomasz | Tomasz's son Olek wanted to name his baby sister Spider-Man. | c3_olek_name
Tomasz | One depot saves an hour a day with Tomasz's Atlas route optimiser. | c3_hour
Tomasz | Tomasz's daughter Zosia sleeps five hours in a row by October. | c3_five_hours
Tomasz | Tomasz had not smoked for eight months by late August. | c3_eight_months
""",
        qs="""
s | What is the name of Tomasz's wife? | Kasia | c3_kasia
s | What is Grace studying part-time? | a master's in statistics with the Open University | c3_masters_ou
s | Where does Grace climb and on which days? | at a climbing wall on Tuesdays and Thursdays | c3_bouldering
s | What is Atlas? | the route optimiser Tomasz's team launched | c3_atlas_name c3_atlas_march
s | What is Tomasz's son called? | Olek | c3_olek
s | What is the name of Tomasz's band? | The Forklifts | c3_band
s | What instrument does Tomasz play? | bass | c3_bass
s | Why did Grace fail her first driving test? | she did not check her mirror when changing lanes on a roundabout | c3_test_failed
s | Where is the new office? | on Canal Street | c3_new_office
s | What did Tomasz sing at the karaoke? | Bohemian Rhapsody | c3_bohemian
s | Which area is Grace moving to? | Ancoats | c3_ancoats
s | What are Grace's cats called? | Miso and Tofu | c3_cats
s | What is Tomasz's daughter called? | Zosia | c3_zosia
s | How did Grace hurt her shoulder? | on an overhang while climbing | c3_shoulder
s | What is Grace's dissertation about? | delivery delays modelled against the weather | c3_dissertation
s | What pet did Olek get? | a goldfish called Spider-Man | c3_goldfish c3_spiderman
s | Where did the team's cancelled offsite plan to go? | Brighton | c3_brighton_plan
s | What job did Grace apply for? | the senior analyst role | c3_role_open c3_applied
m | What did Grace do for exercise while her shoulder healed, and what did she do before? | swimming; before that she went bouldering | c3_grace_swim c3_bouldering
m | Why was the launch of Atlas delayed, and when did it finally go live? | the mapping data vendor was late; it went live on 20 May | c3_atlas_delay_q c3_atlas_delay c3_atlas_live_q c3_atlas_live
m | Why did Tomasz leave his band and how long had he been in it? | no time with a baby and a four-year-old; six years | c3_left_band c3_band_years
m | How many children does Tomasz have and what are their names? | two: Olek and Zosia | c3_olek c3_zosia
m | How many attempts did Grace need to pass her driving test? | two: she failed on 16 April and passed on 15 August | c3_test_failed c3_test_passed
m | How did Grace get to have cats? | she moved to her own flat in Ancoats where pets are allowed and adopted Miso and Tofu | c3_cat_plan c3_cats
m | What does Grace do at team karaoke nights? | she goes to the dinner and leaves before the singing because she hates karaoke | c3_karaoke c3_skipped_karaoke
t | When did Tomasz quit smoking? | on 1 January 2024 | c3_quit_smoking
t | How long had Tomasz smoked before quitting? | twenty-two years, since he was seventeen | c3_quit_smoking c3_kasia
t | When was Atlas originally planned to launch? | at the end of March 2024 | c3_atlas_name c3_atlas_march
t | When did Atlas go live? | 20 May 2024 | c3_atlas_may20_q c3_atlas_may20 c3_atlas_live_q c3_atlas_live
t | When was Zosia born? | 14 June 2024 | c3_zosia
t | When did Grace pass her driving test? | 15 August 2024 | c3_test_passed c3_test_day
t | When was Grace's first driving test? | 16 April 2024 | c3_test_date
t | When did Grace submit her dissertation? | 19 September 2024, a day before the deadline | c3_diss_submitted
t | When did Grace start climbing again after her shoulder injury? | at the beginning of October 2024 | c3_climb_again
t | When does Grace start as senior analyst? | in November 2024 | c3_senior c3_promoted
t | When did Grace move to Ancoats? | in the middle of June 2024 | c3_ancoats
t | How long had Grace been vegan by February 2024? | two years | c3_vegan
n | Does Tomasz smoke? | no, he quit on New Year's Day 2024 | c3_quit_smoking c3_no_cigarette_q c3_no_cigarette
n | Does Grace sing karaoke? | no, she hates it and leaves before the singing | c3_karaoke c3_skipped_karaoke
n | Does Grace eat ham sandwiches? | no, she is vegan | c3_vegan
n | Does Tomasz take sugar in his coffee? | no, he never takes sugar (except once from exhaustion) | c3_no_sugar
n | Does Grace own a car? | no, she borrows her dad's in Leeds | c3_no_car
n | Is Tomasz still in The Forklifts? | no, he left the band | c3_left_band
n | Did the team go to Brighton? | no, the offsite was cancelled | c3_brighton_cancel
n | Does Tomasz cycle to work in winter? | no, he takes the tram | c3_tram_winter c3_tram_again
n | Was Grace climbing in July? | no, her shoulder was strained | c3_shoulder
n | Does Olek have a dog? | no, he got a goldfish instead | c3_goldfish
n | Does Grace climb overhangs now? | no, she sticks to slabs | c3_slabs
a | What is the name of Grace's dog? | not mentioned | 
a | When did Grace get married? | not mentioned | 
a | Which university did Tomasz study at? | not mentioned | 
a | What did the team do on the Brighton beach? | not mentioned | 
a | How much did Grace's new car cost? | not mentioned | 
a | Which song did Grace sing at the karaoke? | not mentioned | 
a | When did Tomasz start smoking again? | not mentioned | 
o | When was Grace's baby born? | not mentioned | c3_zosia
o | Which band does Grace play bass in? | not mentioned | c3_band
o | When did Tomasz pass his driving test? | not mentioned | c3_test_passed
o | What are Tomasz's cats called? | not mentioned | c3_cats
o | What is Tomasz's master's dissertation about? | not mentioned | c3_dissertation
o | When did Grace quit smoking? | not mentioned | c3_quit_smoking
o | How did Tomasz strain his shoulder? | not mentioned | c3_shoulder
o | When was Tomasz promoted to senior analyst? | not mentioned | c3_senior c3_promoted
o | How long has Tomasz been vegan? | not mentioned | c3_vegan
s | How much did Zosia weigh at birth? | three point four kilos | c3_zosia
s | How much time does Atlas save one depot? | an hour a day | c3_hour
s | How long was Tomasz's paternity leave? | two weeks | c3_paternity_q c3_paternity
s | How long did Zosia sleep in a row by October? | five hours | c3_five_hours
m | Where did the goldfish's name come from? | Olek had wanted to call his baby sister Spider-Man, and he named the goldfish that | c3_olek_name c3_goldfish c3_spiderman
m | Which of Tomasz's children was born in 2024 and what did the other want to call her? | Zosia; Olek wanted to call her Spider-Man | c3_zosia c3_olek_name
t | When will Grace get her dissertation results? | in December 2024 | c3_diss_submitted
t | How long had Tomasz gone without a cigarette by late August 2024? | eight months | c3_eight_months
n | Does Tomasz eat sushi? | no, he can't stand raw fish | c3_raw_fish
n | Is Tomasz's family getting a dog soon? | no, maybe when Zosia is in school | c3_goldfish
a | Which university does Grace teach at? | not mentioned | 
a | When did Kasia go back to work? | not mentioned | 
o | When did Grace's daughter start sleeping five hours a night? | not mentioned | c3_zosia c3_five_hours
o | Why did Tomasz fail his driving test? | not mentioned | c3_test_failed
o | What did Grace name her goldfish? | not mentioned | c3_goldfish c3_spiderman
o | Why does Grace take the tram in winter? | not mentioned | c3_tram_winter
""",
    )
)


# c4: a personal trainer and his client -------------------------------------------------------------
CONVS.append(
    dict(
        id="c4",
        speakers=("Marcus", "Helen"),
        relation="personal trainer and client",
        script="""
== 2023-09-12
MARCUS: Welcome, Helen. Before we lift anything, tell me what you want out of this.
HELEN: I want to climb Snowdon with my daughter Emma next June, for her twenty-first. Right now I get puffed on the stairs at work. [[c4_snowdon_goal]]
MARCUS: That's a great goal. Nine months is plenty of time. What do you do for work?
HELEN: I'm an accountant. I sit at a desk ten hours a day, more in January. [[c4_accountant]]
MARCUS: Any injuries I should know about?
HELEN: My lower back. I had a slipped disc in 2019 and it still flares up if I lift badly. [[c4_back]]
MARCUS: Then no heavy deadlifts for a while. We'll build your core first. [[c4_no_deadlift]]
HELEN: Please also don't make me run. I hate running. Treadmills especially, they make me feel like a hamster. [[c4_hate_running]]
MARCUS: Noted. Walking and hills suit your goal better anyway. Allergies?
HELEN: Nuts. All of them, peanuts and tree nuts. I carry two EpiPens. [[c4_nuts]]
MARCUS: So no protein bars from the vending machine. Most of them have nuts.
HELEN: I learned that the hard way at a conference once.
MARCUS: How active are you now?
HELEN: I walk the dog in the evening, twenty minutes. Bramble, a springer spaniel. He'd walk all day if I let him. [[c4_bramble]]
MARCUS: Let him! Make it forty minutes and that's your first homework.
HELEN: He'll love you.
MARCUS: I'll be honest with you, dogs make me nervous. I was bitten as a kid. But I'll love him from a distance. [[c4_dogs_nervous]]
HELEN: He's a softie. He'll win you over.
MARCUS: We'll see. Tuesday and Friday at seven, then? [[c4_schedule]]
HELEN: Seven in the morning. Before work. I'll be there. [[c4_seven]]
== 2023-10-03
MARCUS: Three weeks in. How's the body?
HELEN: Sore in places I didn't know I had. But the back is fine.
MARCUS: Good. How long are Bramble's walks now?
HELEN: Five kilometres most evenings. He's thinner too, the vet was impressed. [[c4_five_k]]
MARCUS: And food? You said you take sugar in your tea.
HELEN: Took. I stopped the sugar last week. Two spoons a cup, six cups a day, it added up. [[c4_sugar_quit]]
MARCUS: That's a big one. How does tea taste?
HELEN: Like sadness. But I'm getting used to it.
MARCUS: It gets better, I promise. I'll tell you my news: I've entered my first triathlon. A sprint distance in April. [[c4_tri_entry]]
HELEN: You? I thought you'd done dozens.
MARCUS: Rugby player, not a triathlete. I played for Sale's academy till my shoulder went at nineteen. [[c4_rugby]]
HELEN: So you're a beginner too.
MARCUS: At swimming, definitely. I swim like a brick. [[c4_brick]]
HELEN: Do you celebrate with a beer after training?
MARCUS: I've never drunk alcohol. Not once. My dad drank too much and I decided young. [[c4_teetotal]]
HELEN: I respect that. I'm a Friday-night glass of red person myself. [[c4_wine_fridays]]
MARCUS: One glass is fine. Squats now.
HELEN: I knew you'd say that.
MARCUS: Ten more.
== 2023-11-07
MARCUS: Weigh-in day. Eighty-two kilos. You started at eighty-four. [[c4_weight82]]
HELEN: Only two?
MARCUS: Two in eight weeks and you've gained muscle. That's exactly right.
HELEN: I started a Pilates class too. Wednesday evenings at the church hall. [[c4_pilates]]
MARCUS: Perfect for the back. Do you like it?
HELEN: I love it. The teacher is eighty and can put her foot behind her head.
MARCUS: Goals.
HELEN: What's new with you?
MARCUS: Big news. I'm leaving this gym. I'm opening my own studio in Chorlton in February. [[c4_studio_plan]]
HELEN: Marcus! Will I follow you there?
MARCUS: I hope so. Same times, fewer mirrors.
HELEN: I'll come. It's nearer my office anyway.
MARCUS: How's Emma? Is she training for Snowdon too?
HELEN: She says she's young and doesn't need to. She does netball three times a week, so maybe she's right. [[c4_emma_netball]]
MARCUS: Then you have to keep up with her.
HELEN: Don't remind me.
MARCUS: Still off the sugar? [[c4_sugar_5weeks_q]]
HELEN: Five weeks. I don't miss it any more. [[c4_sugar_5weeks]]
MARCUS: Lunges.
HELEN: Of course.
== 2023-12-12
HELEN: Bad news. My back went on Saturday. [[c4_back_sat]]
MARCUS: What happened?
HELEN: My husband Richard and I carried the Christmas tree in from the car and I twisted while lifting it. [[c4_back_flare]]
MARCUS: Ouch. Have you seen someone?
HELEN: My physio on Monday. She says two weeks with no weights, just walking and gentle stretches. [[c4_no_weights]]
MARCUS: Then that's what we'll do. I'll send you a stretching routine.
HELEN: I'm annoyed. I was getting strong.
MARCUS: You still are. Two weeks is nothing. I know about backs and shoulders going.
HELEN: Your rugby shoulder?
MARCUS: Still aches in the cold. I can't do overhead presses with a heavy bar. [[c4_shoulder]]
HELEN: We're a pair.
MARCUS: Christmas plans? Be careful with the food.
HELEN: My sister's hosting. She always puts chestnuts in the stuffing, so I bring my own. [[c4_chestnuts]]
MARCUS: Good. No surprises for those EpiPens.
HELEN: What about you?
MARCUS: I'm at my mum's. She'll feed me for three days straight. [[c4_mum_xmas]]
HELEN: And Bramble's walks?
MARCUS: Keep them, they're the best thing for your back.
HELEN: He'll be delighted.
== 2024-01-09
HELEN: I'm sorry to do this, but I have to cancel all our sessions until February. [[c4_cancel_jan]]
MARCUS: Busy season?
HELEN: Tax returns. The deadline is the 31st and half my clients haven't sent their paperwork. [[c4_tax_deadline]]
MARCUS: Understood. Promise me you'll keep walking Bramble.
HELEN: Every evening. It's the only time I'm not looking at a screen.
MARCUS: And no late-night biscuits at the desk.
HELEN: I'm doing dry January, does that count? No wine at all this month. [[c4_dry_jan]]
MARCUS: Welcome to my world.
HELEN: How do you do it all year?
MARCUS: Practice. I'm trying something harder this month: Veganuary. No meat, no eggs, no dairy. [[c4_veganuary]]
HELEN: You? The man who eats six eggs for breakfast?
MARCUS: That's exactly why. I want to see if I feel different.
HELEN: How's the swimming for the triathlon? [[c4_swim400_q]]
MARCUS: Better. I can do four hundred metres without stopping now. [[c4_swim400]]
HELEN: From a brick to a fish.
MARCUS: A heavy fish.
HELEN: And the studio?
MARCUS: The builders are in. The floor goes down next week and we open on the first of February. [[c4_studio_date]]
HELEN: I'll be your first client back.
MARCUS: Deal.
== 2024-02-13
MARCUS: Welcome to the new place! What do you think?
HELEN: It's gorgeous. I like the plants. And no one grunting by the mirrors.
MARCUS: Open since the first, and I already have twelve clients. [[c4_studio_open]]
HELEN: Amazing. How was Veganuary?
MARCUS: Honestly, I lasted till the 20th. I missed eggs too much. I'm back to eating everything. [[c4_vegan_stop]]
HELEN: Ha. I did better: a full dry January.
MARCUS: And now?
HELEN: A glass of wine on Saturdays only, not Fridays any more. I sleep better. [[c4_wine_saturdays]]
MARCUS: Good trade. And the back?
HELEN: Perfect. No twinges since Christmas.
MARCUS: Are you still doing Pilates?
HELEN: No, sadly. The class moved to Wednesday mornings and I can't do those with work. [[c4_pilates_stop]]
MARCUS: Then we'll do a core circuit here on Fridays instead. [[c4_core_friday]]
HELEN: I was afraid you'd say that.
MARCUS: How did the tax season go?
HELEN: Everyone filed on time except one man who sent me a shoebox of receipts on the 30th. [[c4_shoebox]]
MARCUS: Did he make it?
HELEN: With eleven minutes to spare.
== 2024-03-19
MARCUS: Weigh-in: seventy-eight kilos. Six down since September. [[c4_weight78]]
HELEN: I'll take it. My work trousers are falling down.
MARCUS: Buy new ones. You've earned them.
HELEN: Emma and I did a practice hike on Kinder Scout on Sunday. Five hours. [[c4_kinder]]
MARCUS: How did it feel?
HELEN: I kept up with her on the way up. She had to wait for me going down. My knees.
MARCUS: We'll work on that. Downhill is eccentric strength. Step-downs, lots of them.
HELEN: I also tried a jog. Just to see.
MARCUS: And?
HELEN: Still hate it. Ten minutes and I walked home. I'm never going to be a runner. [[c4_jog_try]]
MARCUS: You don't need to be. You need to be a hiker.
HELEN: When's your race again? [[c4_tri_date_q]]
MARCUS: The 14th of April, in Nottingham. Four weeks. [[c4_tri_date]]
HELEN: Nervous?
MARCUS: About the swim. It's in a lake, and the lake is cold.
HELEN: Wetsuit? [[c4_wetsuit_q]]
MARCUS: Bought one. It took me twenty minutes to get into it in the shop. [[c4_wetsuit]]
== 2024-04-23
HELEN: Well? How did the triathlon go?
MARCUS: Finished it! One hour twenty-four minutes. I was near the back of the swim and then passed thirty people on the bike. [[c4_tri_done]]
HELEN: Congratulations! Will you do another? [[c4_tri_maybe_q]]
MARCUS: An Olympic distance next year, maybe. I haven't decided. [[c4_tri_maybe]]
HELEN: I have news too. From May I'm working four days a week. Fridays off. [[c4_four_days]]
MARCUS: That's huge. More time for hills.
HELEN: That was the idea. Richard's retiring in the summer, so we want to walk more together. [[c4_richard_retire]]
MARCUS: And Bramble?
HELEN: He cut his paw on glass in the park last week. He's in a cone and very offended. [[c4_bramble_paw]]
MARCUS: Poor thing. Give him a cuddle from me.
HELEN: From a distance?
MARCUS: I patted him at your door last time, you saw me. I'm improving. [[c4_patted]]
HELEN: You did! He was thrilled.
MARCUS: Snowdon date? [[c4_snowdon_date_q]]
HELEN: The 8th of June. Llanberis path, up and down. [[c4_snowdon_date]]
MARCUS: Then May is step-downs and one long hike a week.
HELEN: And squats.
MARCUS: Always squats.
== 2024-06-18
HELEN: We did it! We stood on top of Snowdon on the 8th. [[c4_snowdon_done]]
MARCUS: Helen! I saw the photo. Emma looks proud.
HELEN: She cried a bit. So did I. It was foggy at the top, we couldn't see anything, and we didn't care. [[c4_fog]]
MARCUS: How were the knees coming down?
HELEN: Fine! All those step-downs. Emma complained more than me. [[c4_knees_fine]]
MARCUS: That's a first.
HELEN: What's next? I don't want to stop.
MARCUS: What about Scafell Pike in the autumn? Or the Yorkshire Three Peaks?
HELEN: Maybe Scafell with Richard. Not the Three Peaks, that's twenty-four miles. [[c4_next_goal]]
MARCUS: Scafell then. Same plan, more hills.
HELEN: Are you keeping me on Tuesdays and Fridays?
MARCUS: Tuesdays only, since you're off on Fridays and walking. Fridays are yours. [[c4_tuesdays]]
HELEN: And the sugar is still gone, nine months now. I can't drink sweet tea any more, it's like syrup. [[c4_sugar_9months]]
MARCUS: That's when you know it's a habit.
HELEN: What about you, any new race?
MARCUS: I've booked the Olympic distance for next May. I said I hadn't decided, but I missed the feeling. [[c4_olympic_booked]]
HELEN: Good. Someone has to suffer besides me.
MARCUS: See you Tuesday.
HELEN: Seven sharp.
""",
        obs="""
Helen | Helen wants to climb Snowdon with her daughter Emma in June for Emma's twenty-first birthday. | c4_snowdon_goal
Helen | Helen is an accountant who sits at a desk ten hours a day. | c4_accountant
Helen | Helen has a lower back problem from a slipped disc in 2019. | c4_back
Helen | Helen hates running, especially on treadmills. | c4_hate_running
Helen | Helen is allergic to peanuts and tree nuts and carries two EpiPens. | c4_nuts
Helen | Helen has a springer spaniel named Bramble that she walks in the evenings. | c4_bramble
Marcus | Marcus is nervous around dogs because he was bitten as a child. | c4_dogs_nervous
Helen | Helen stopped taking sugar in her tea at the end of September. | c4_sugar_quit
Marcus | Marcus entered his first sprint triathlon, in April. | c4_tri_entry
Marcus | Marcus is a weak swimmer who swims like a brick. | c4_brick
Marcus | Marcus played rugby in Sale's academy until a shoulder injury at nineteen. | c4_rugby
Marcus | Marcus has never drunk alcohol. | c4_teetotal
Helen | Helen has a glass of red wine on Friday nights. | c4_wine_fridays
Helen | Helen weighed eighty-two kilos in November, down from eighty-four. | c4_weight82
Helen | Helen started a Pilates class on Wednesday evenings at a church hall. | c4_pilates
Marcus | Marcus is opening his own studio in Chorlton. | c4_studio_plan
Helen | Helen's daughter Emma plays netball three times a week. | c4_emma_netball
Helen | Helen hurt her back lifting a Christmas tree with her husband Richard. | c4_back_sat c4_back_flare
Helen | Helen's physio told her no weights for two weeks. | c4_no_weights
Marcus | Marcus cannot do heavy overhead presses because of his old rugby shoulder. | c4_shoulder
Helen | Helen brings her own stuffing at Christmas because her sister puts chestnuts in it. | c4_chestnuts
Helen | Helen cancelled her training sessions until February because of the tax deadline. | c4_cancel_jan c4_tax_deadline
Helen | Helen did dry January. | c4_dry_jan
Marcus | Marcus tried Veganuary. | c4_veganuary
Marcus | Marcus can swim four hundred metres without stopping. | c4_swim400_q c4_swim400
Marcus | Marcus opened his studio on 1 February and has twelve clients. | c4_studio_date c4_studio_open
Marcus | Marcus gave up being vegan on 20 January because he missed eggs. | c4_vegan_stop
Helen | Helen now drinks wine only on Saturdays, not Fridays. | c4_wine_saturdays
Helen | Helen stopped Pilates because the class moved to Wednesday mornings. | c4_pilates_stop
Helen | Helen does a core circuit with Marcus on Fridays instead of Pilates. | c4_core_friday
Helen | Helen weighed seventy-eight kilos in March, six down since September. | c4_weight78
Helen | Helen did a five-hour practice hike on Kinder Scout with Emma. | c4_kinder
Helen | Helen tried jogging again and still hates it. | c4_jog_try
Marcus | Marcus's triathlon was on 14 April in Nottingham. | c4_tri_date_q c4_tri_date
Marcus | Marcus finished his triathlon in one hour twenty-four minutes. | c4_tri_done
Marcus | Marcus might do an Olympic-distance triathlon next year but had not decided. | c4_tri_maybe_q c4_tri_maybe
Helen | Helen works four days a week from May, with Fridays off. | c4_four_days
Helen | Helen's dog Bramble cut his paw on glass in the park. | c4_bramble_paw
Marcus | Marcus patted Helen's dog Bramble. | c4_patted
Helen | Helen climbed Snowdon with Emma on 8 June by the Llanberis path. | c4_snowdon_date_q c4_snowdon_date c4_snowdon_done
Helen | Helen's knees were fine coming down Snowdon. | c4_knees_fine
Helen | Helen might climb Scafell Pike with Richard but will not do the Yorkshire Three Peaks. | c4_next_goal
Helen | Helen trains with Marcus on Tuesdays only from June. | c4_tuesdays
Helen | Helen has not taken sugar in her tea for nine months. | c4_sugar_5weeks_q c4_sugar_5weeks c4_sugar_9months
Marcus | Marcus booked an Olympic-distance triathlon for next May. | c4_olympic_booked
Helen | Helen trains with Marcus on Tuesdays and Fridays at seven in the morning. | c4_schedule c4_seven
Marcus | Marcus bought a wetsuit for his triathlon; it took him twenty minutes to get into it. | c4_wetsuit_q c4_wetsuit
Marcus | Marcus spends Christmas at his mum's. | c4_mum_xmas
Helen | Helen's husband Richard is retiring in the summer. | c4_richard_retire
Helen | Helen's walks with Bramble reached five kilometres most evenings and Bramble got thinner. | c4_five_k
Helen | Helen should not do heavy deadlifts for a while because of her back. | c4_no_deadlift
Helen | Helen found it foggy at the top of Snowdon. | c4_fog
Helen | Helen had a client who sent her a shoebox of receipts the day before the tax deadline. | c4_shoebox
""",
        qs="""
s | What mountain does Helen want to climb? | Snowdon | c4_snowdon_goal
s | What does Helen do for a living? | she is an accountant | c4_accountant
s | What is Helen allergic to? | peanuts and tree nuts | c4_nuts
s | What kind of dog is Bramble? | a springer spaniel | c4_bramble
s | Why is Marcus nervous around dogs? | he was bitten as a child | c4_dogs_nervous
s | What rugby team did Marcus play for? | Sale's academy | c4_rugby
s | Where is Marcus's new studio? | Chorlton | c4_studio_plan
s | What sport does Emma play? | netball | c4_emma_netball
s | How did Helen hurt her back in December? | carrying the Christmas tree in from the car with Richard | c4_back_flare
s | Why does Helen bring her own stuffing at Christmas? | her sister puts chestnuts in hers | c4_chestnuts
s | Where did Helen and Emma do a practice hike? | Kinder Scout | c4_kinder
s | Where was Marcus's triathlon? | Nottingham | c4_tri_date_q c4_tri_date
s | What was Marcus's triathlon time? | one hour twenty-four minutes | c4_tri_done
s | How did Bramble hurt his paw? | he cut it on glass in the park | c4_bramble_paw
s | Which path did Helen take up Snowdon? | the Llanberis path | c4_snowdon_date_q c4_snowdon_date
s | What is Helen's husband called? | Richard | c4_back_flare
s | How many clients did Marcus have after his studio opened? | twelve | c4_studio_open
s | Which mountain might Helen climb next? | Scafell Pike, with Richard | c4_next_goal
m | How much weight had Helen lost by March and what did she weigh at the start? | six kilos; she started at eighty-four | c4_weight82 c4_weight78
m | Why did Marcus stop playing rugby and how does it still affect his training? | his shoulder went at nineteen; he cannot do heavy overhead presses | c4_rugby c4_shoulder
m | How did Helen's wine habit change over the winter? | from a glass on Fridays, to none in dry January, to only Saturdays | c4_wine_fridays c4_dry_jan c4_wine_saturdays
m | What happened to Helen's Pilates and what replaced it? | the class moved to Wednesday mornings so she stopped; Marcus added a Friday core circuit | c4_pilates c4_pilates_stop c4_core_friday
m | How did Marcus's swimming change between October and January? | from swimming like a brick to four hundred metres without stopping | c4_tri_entry c4_brick c4_swim400_q c4_swim400
m | Why does Helen have Fridays free from May, and how did it change her training? | she works four days a week; she trains with Marcus on Tuesdays only and walks on Fridays | c4_four_days c4_tuesdays
m | Which of Helen's allergies matters when choosing protein bars and Christmas stuffing? | her nut allergy: bars often have nuts and her sister's stuffing has chestnuts | c4_nuts c4_chestnuts
t | When did Helen start training with Marcus? | in September 2023 | c4_snowdon_goal
t | When did Helen give up sugar in her tea? | in the last week of September 2023 | c4_sugar_quit
t | When did Helen hurt her back lifting the Christmas tree? | Saturday 9 December 2023 | c4_back_sat c4_back_flare
t | When did Marcus's studio open? | 1 February 2024 | c4_studio_date c4_studio_open
t | When did Marcus give up Veganuary? | on 20 January 2024 | c4_vegan_stop
t | When was Marcus's triathlon? | 14 April 2024 | c4_tri_date_q c4_tri_date
t | When did Helen climb Snowdon? | 8 June 2024 | c4_snowdon_done
t | When does Helen start working four days a week? | May 2024 | c4_four_days
t | How long had Helen been off sugar by June 2024? | nine months | c4_sugar_9months
t | When did Helen do the Kinder Scout hike? | Sunday 17 March 2024 | c4_kinder
t | When did Helen have her slipped disc? | in 2019 | c4_back
t | When was Helen's tax deadline? | 31 January 2024 | c4_tax_deadline
n | Does Helen like running? | no, she hates it and tried jogging again only to walk home | c4_hate_running c4_jog_try
n | Does Marcus drink alcohol? | no, never | c4_teetotal
n | Does Helen take sugar in her tea? | no, she gave it up | c4_sugar_quit c4_sugar_9months
n | Is Marcus still vegan? | no, he stopped on 20 January | c4_vegan_stop
n | Does Helen still go to Pilates? | no, the class moved to mornings | c4_pilates_stop
n | Can Helen eat chestnut stuffing? | no, she is allergic to nuts | c4_nuts c4_chestnuts
n | Did Helen train with Marcus in January 2024? | no, she cancelled until February for tax season | c4_cancel_jan
n | Will Helen do the Yorkshire Three Peaks? | no, it is twenty-four miles | c4_next_goal
n | Does Helen still drink wine on Fridays? | no, only on Saturdays now | c4_wine_saturdays
n | Was Marcus sure he would do another triathlon in April? | no, he had not decided (he later booked one) | c4_tri_maybe_q c4_tri_maybe c4_olympic_booked
n | Could Helen lift weights right after her December back flare? | no, two weeks with no weights | c4_no_weights
a | What is the name of Marcus's dog? | not mentioned | 
a | When did Helen run a marathon? | not mentioned | 
a | What did Marcus name his studio? | not mentioned | 
a | When did Emma graduate from university? | not mentioned | 
a | Which swimming club did Helen join? | not mentioned | 
a | When did Marcus climb Ben Nevis? | not mentioned | 
a | How much did Helen's new hiking boots cost? | not mentioned | 
o | When did Marcus climb Snowdon? | not mentioned | c4_snowdon_done
o | What is Marcus allergic to? | not mentioned | c4_nuts
o | When did Helen finish her first triathlon? | not mentioned | c4_tri_done
o | When did Helen try Veganuary? | not mentioned | c4_veganuary
o | Why has Helen never drunk alcohol? | not mentioned | c4_teetotal
o | How did Marcus hurt his back lifting a Christmas tree? | not mentioned | c4_back_flare
o | What is the name of Marcus's springer spaniel? | not mentioned | c4_bramble
o | When did Helen open her studio? | not mentioned | c4_studio_open
o | When did Marcus give up sugar in his tea? | not mentioned | c4_sugar_quit
s | On which days did Helen first train with Marcus, and at what time? | Tuesdays and Fridays at seven in the morning | c4_schedule c4_seven
s | How long did it take Marcus to get into his wetsuit in the shop? | twenty minutes | c4_wetsuit_q c4_wetsuit
s | What was it like at the top of Snowdon? | foggy; they couldn't see anything | c4_fog
s | How far were Helen's walks with Bramble by October? | five kilometres most evenings | c4_five_k
s | What did one of Helen's clients send her on 30 January? | a shoebox of receipts | c4_shoebox
s | How old did Emma turn in June 2024? | twenty-one | c4_snowdon_goal
m | Where did Helen and Marcus each spend Christmas 2023? | Helen at her sister's, Marcus at his mum's | c4_chestnuts c4_mum_xmas
m | Why does Helen want to walk more from the summer of 2024? | she works four days a week from May and Richard is retiring in the summer | c4_four_days c4_richard_retire
t | When is Richard retiring? | in the summer of 2024 | c4_richard_retire
n | Does Helen do heavy deadlifts? | no, not for a while; Marcus builds her core first because of her back | c4_back c4_no_deadlift
n | Does Marcus still keep away from Bramble? | no, he patted him at Helen's door | c4_patted
a | What is the name of Emma's netball team? | not mentioned | 
a | When did Richard run the Snowdon race? | not mentioned | 
o | Which rugby team did Helen play for? | not mentioned | c4_rugby
o | When was Helen bitten by a dog? | not mentioned | c4_dogs_nervous
o | How long did it take Helen to get into her wetsuit? | not mentioned | c4_wetsuit_q c4_wetsuit
""",
    )
)


# c5: two neighbours over the garden fence, a retired headteacher and a young father ------------------
CONVS.append(
    dict(
        id="c5",
        speakers=("Rosa", "Sam"),
        relation="next-door neighbours",
        script="""
== 2025-03-08
SAM: Morning, Rosa! Sorry about the noise this week.
ROSA: The builders? I hardly hear them over Pancho. [[c5_pancho_name]]
SAM: They've ripped out the whole kitchen. We're living on a microwave in the front room until May. [[c5_kitchen]]
ROSA: With the twins? You're brave.
SAM: Kemi and Tayo think it's a camping holiday. They're three, everything is an adventure. [[c5_twins]]
ROSA: And Ada?
SAM: Ada is less amused. She's a surgeon, she likes things clean. [[c5_ada]]
ROSA: Come and use my oven any time. I mean it.
SAM: You're a saint. What are you planting?
ROSA: Tomato seedlings on every windowsill. They go down to the allotment in May. [[c5_tomatoes]]
SAM: How many this year?
ROSA: Forty. My late husband always grew forty, so I grow forty. [[c5_widow]]
SAM: That's lovely. Is Pancho behaving?
ROSA: He's thirty-one years old and he's never behaved. He learned to copy your drill yesterday. [[c5_pancho]]
SAM: An African grey doing a drill impression. The twins would love that. [[c5_african_grey]]
ROSA: Bring them over. He also says "hola guapa", my husband taught him. [[c5_hola]]
SAM: I will. Do you need anything from the shops? I'm going in the car.
ROSA: Some milk, please. And no more biscuits, my doctor is cross about my sugar.
SAM: Your diabetes? [[c5_diabetes_q]]
ROSA: Type two. I'm meant to cut the sugar and I keep buying custard creams. [[c5_diabetes]]
== 2025-04-05
ROSA: Thank you for driving me to the eye hospital last month. [[c5_eye_hospital]]
SAM: How are the eyes after the cataract operation? [[c5_cataract]]
ROSA: I can see the birds on the feeder again. But I've made a decision: I've stopped driving. [[c5_stop_driving]]
SAM: Really? You drive so carefully.
ROSA: I'm seventy-three, and at night the lights still make halos. I'm selling the Fiesta to my neighbour's nephew. [[c5_sell_car]]
SAM: Any time you need a lift, just knock.
ROSA: The bus stops right outside. I'll manage, but thank you.
SAM: Would you like a glass of wine? Ada left a bottle open.
ROSA: Aren't you having one?
SAM: Not this year. I haven't drunk since New Year and I'm going to do the whole of 2025 dry. [[c5_dry_year]]
ROSA: Why?
SAM: I was having a couple every night after the twins went to bed. It crept up on me.
ROSA: Good for you. I'll have a small one.
SAM: I baked these for you. Sugar-free oat biscuits, for the diabetes. [[c5_oat_biscuits]]
ROSA: Sam. You're too kind. Did you bake them in my oven?
SAM: I did. Thursday afternoon, while you were at the library.
ROSA: Any news on the kitchen?
SAM: The worktop arrived three inches too short. So now it's June. [[c5_kitchen_delay]]
ROSA: Builders. My husband would have done it himself.
SAM: I'm tempted. I'm better with wood than they are.
== 2025-05-10
ROSA: What's all the sawing in your shed?
SAM: A surprise. You'll see in a month.
ROSA: Is it furniture again?
SAM: It's always furniture. I made the twins' beds last year, I find it calming. [[c5_woodwork]]
ROSA: I have news. I've joined the choir at St Mary's. Thursday evenings. [[c5_choir]]
SAM: You sing?
ROSA: I sang at school, sixty years ago. The choir leader says I'm an alto.
SAM: That's wonderful. Are there concerts?
ROSA: One in July. I'm terrified.
SAM: We'll come and cheer.
ROSA: Are you coming to the allotment to help plant the tomatoes?
SAM: I'd love to, but I have to be careful. I'm allergic to wasp stings. I got stung last August and ended up in A&E. [[c5_wasp]]
ROSA: Dios mío. Do you have one of those pens?
SAM: An EpiPen, always in my pocket. Ada made me promise. [[c5_sam_epipen]]
ROSA: There's a wasp nest in the compost bin. I'll have it removed before you come.
SAM: That would be perfect.
ROSA: How's the dry year?
SAM: Four months. I sleep so much better, even with the twins waking me up.
ROSA: And the football? [[c5_football_q]]
SAM: Still every Wednesday. Five-a-side with the dads from nursery. [[c5_football]]
ROSA: Be careful with your knees.
== 2025-06-14
SAM: Close your eyes and come into the garden.
ROSA: What have you done?
SAM: Open them. It's for you.
ROSA: A bench! Sam! For me? [[c5_bench_word]]
SAM: Oak, from the old beams the builders took out. For your side of the fence, under the plum tree. [[c5_bench]]
ROSA: I'm crying. My husband would have loved it.
SAM: Sit on it. Test it.
ROSA: It's perfect. Now I can sit and listen to the birds.
SAM: How's the choir?
ROSA: Wonderful. I've made friends. Two of the altos are widows too.
SAM: And the tomatoes are in?
ROSA: All forty. No wasps anywhere, I promise. The council took the nest away. [[c5_nest_gone]]
SAM: Thank you. I'll come on Saturday.
ROSA: My daughter video-called on Sunday. I can do it on the phone now, by myself. [[c5_video]]
SAM: You used to refuse to touch a smartphone! [[c5_phone_q]]
ROSA: I used to. Now I'm not a fan, but I'm a user. [[c5_phone]]
SAM: Inés in Chile? [[c5_ines_chile]]
ROSA: Yes, in Santiago. Mateo and Sofía showed me their school drawings. [[c5_ines]]
SAM: How old are they now? [[c5_grandkids_q]]
ROSA: Eight and five. I haven't seen them in person for three years. [[c5_grandkids]]
SAM: That's too long.
ROSA: Much too long. I need to go.
SAM: You should go. We'll look after everything here.
== 2025-07-19
ROSA: Is that your mother I saw in the garden?
SAM: Yes! Mum flew in from Lagos on Monday. She's staying for three weeks. [[c5_mum_visit]]
ROSA: How lovely. The twins must be excited.
SAM: They haven't left her side. She brought them matching outfits.
ROSA: And she gets to see the new kitchen.
SAM: It's done! Finished at the end of June, six weeks late, but it's done. [[c5_kitchen_done]]
ROSA: At last. You can give me my oven back.
SAM: Ha. Your oven has served us well.
ROSA: The concert was on Thursday. Were you there? I couldn't see. [[c5_concert_thu]]
SAM: Ada and I were at the back. You were brilliant. The twins fell asleep in the second half.
ROSA: That's the best review I've ever had. [[c5_concert]]
SAM: It's a compliment, they never sit still for anything.
ROSA: Why are you limping?
SAM: I twisted my ankle at football on Wednesday. [[c5_ankle]]
ROSA: Is it bad?
SAM: A sprain. And I've decided that's it for football. I'm thirty-five, my body is telling me something. [[c5_football_stop]]
ROSA: Do something gentle. Walk with me to the allotment.
SAM: I'll take you up on that when it heals.
ROSA: And the dry year? [[c5_mum_drinking_q]]
SAM: Still dry. Mum is delighted, she's never liked me drinking. [[c5_mum_drinking]]
ROSA: Mothers always know.
== 2025-08-23
ROSA: I've done it. I booked my flights to Santiago. [[c5_flights]]
SAM: Rosa! When?
ROSA: The 5th of December to the 2nd of January. Christmas with the grandchildren. [[c5_flight_dates]]
SAM: That's wonderful. Four weeks of summer in December.
ROSA: My only worry is Pancho. He can't come, and he hates strangers. [[c5_strangers]]
SAM: He knows us. We'll have him. The twins will talk to him every day. [[c5_we_have_him]]
ROSA: Are you sure? Ada won't mind a parrot in the house? [[c5_pancho_sam_q]]
SAM: Ada says yes, as long as he doesn't learn to say anything rude. [[c5_pancho_sam]]
ROSA: I can't promise that.
SAM: How are the tomatoes?
ROSA: Too many! I've given away kilos. Take a bag for your mum to cook with.
SAM: She went home last week, sadly. But we'll eat them.
ROSA: How's the ankle?
SAM: Healed. I walk to the allotment with you now, remember?
ROSA: Of course. My memory.
SAM: And I've started swimming at the lido on Sunday mornings. No tackles in swimming. [[c5_sam_swim]]
ROSA: Very wise.
SAM: Did you get wasps at the allotment this summer? [[c5_no_wasps_summer_q]]
ROSA: Not one. I checked every week for you. [[c5_no_wasps_summer]]
== 2025-09-20
SAM: First week of nursery done! The twins started on the 8th. [[c5_nursery]]
ROSA: Did they cry?
SAM: Tayo cried. Kemi ran in without looking back. Ada cried in the car. [[c5_tayo_cried]]
ROSA: And you?
SAM: I didn't cry. Much.
ROSA: Now you'll have a quiet house to work in.
SAM: Funny you say that. I was offered a job in London, a senior UX research role. I turned it down. [[c5_job_offer]]
ROSA: Why?
SAM: It meant going in three days a week. I like working from home, I like being here when the twins get back. [[c5_wfh]]
ROSA: Good choice. You can't buy that time back.
SAM: How's the choir?
ROSA: Rehearsing for Christmas, but I'll miss the concert because I'll be in Chile. [[c5_miss_concert]]
SAM: Shame. Still, Chile!
ROSA: And the allotment: I've given up half my plot. Forty tomatoes is too much for my back now. [[c5_half_plot]]
SAM: Who's taking the other half? [[c5_squash_q]]
ROSA: A young couple from the flats. They want to grow squash. [[c5_squash]]
SAM: Next year you'll grow twenty? [[c5_next_year_maybe_q]]
ROSA: Maybe twenty. Maybe twenty-five. I'm not sure yet. [[c5_next_year_maybe]]
SAM: Either way, I'll carry the watering cans. I'm not a fan of weeding, but I'm good at carrying. [[c5_weeding]]
== 2025-10-25
ROSA: Are the twins going trick-or-treating?
SAM: Kemi's going as a witch, Tayo as a dinosaur. Will you open the door to them? [[c5_costumes]]
ROSA: Of course. I'll have sugar-free sweets for them and none for me.
SAM: Good, since your doctor would kill you.
ROSA: My sugar is much better. My doctor says the last test was the best in five years. [[c5_sugar_better]]
SAM: That's brilliant, Rosa.
ROSA: Because I stopped buying custard creams. Since July I haven't had one. [[c5_no_custard]]
SAM: A hero.
ROSA: And you, your dry year is nearly over.
SAM: Two more months. People ask if I'll have a drink at New Year, and honestly, I don't think I will. [[c5_maybe_continue]]
ROSA: You don't miss it?
SAM: Not at all. I'm going to keep going and see how long I last.
ROSA: Pancho has a new word. Listen. He says "Tayo!" now. [[c5_pancho_tayo]]
SAM: He'll be fine with us in December, then.
ROSA: I'll leave a list. He eats grapes but not avocado. Avocado is poison for parrots. [[c5_pancho_food]]
SAM: No avocado, noted. We have a fridge full of it.
ROSA: Keep it closed, then.
SAM: How are you getting to the airport? [[c5_train_airport_q]]
ROSA: The train to Heathrow. I'm not driving, remember? [[c5_train_airport]]
SAM: I'll drive you to the station at least. [[c5_drive_station]]
ROSA: That I accept.
""",
        obs="""
Sam | Sam's kitchen is being rebuilt and the family is living on a microwave until May. | c5_kitchen
Sam | Sam has three-year-old twins named Kemi and Tayo. | c5_twins
Sam | Sam's wife Ada is a surgeon. | c5_ada
Rosa | Rosa grows forty tomato plants for her allotment, as her late husband did. | c5_tomatoes c5_widow
Rosa | Rosa has a thirty-one-year-old African grey parrot named Pancho. | c5_pancho_name c5_pancho c5_african_grey
Rosa | Rosa has type two diabetes and is meant to cut down on sugar. | c5_diabetes_q c5_diabetes
Rosa | Rosa had a cataract operation in March. | c5_eye_hospital c5_cataract
Rosa | Rosa has stopped driving because lights make halos at night. | c5_stop_driving c5_sell_car
Rosa | Rosa is selling her Fiesta. | c5_sell_car
Sam | Sam has not drunk alcohol since New Year and plans to stay dry for all of 2025. | c5_dry_year
Sam | Sam's kitchen was delayed to June because the worktop was too short. | c5_kitchen_delay
Sam | Sam makes furniture in his shed and built his twins' beds. | c5_woodwork
Rosa | Rosa joined the choir at St Mary's, which meets on Thursday evenings. | c5_choir
Sam | Sam is allergic to wasp stings and carries an EpiPen. | c5_wasp c5_sam_epipen
Sam | Sam plays five-a-side football on Wednesdays. | c5_football_q c5_football
Sam | Sam built Rosa an oak bench from old beams. | c5_bench_word c5_bench
Rosa | Rosa had the wasp nest at her allotment removed. | c5_nest_gone
Rosa | Rosa found no wasps at the allotment all summer. | c5_no_wasps_summer_q c5_no_wasps_summer
Rosa | Rosa can now make video calls on her phone by herself. | c5_video
Rosa | Rosa's daughter Inés lives in Santiago, Chile, with Mateo and Sofía, aged eight and five. | c5_ines_chile c5_ines c5_grandkids_q c5_grandkids
Rosa | Rosa has not seen her grandchildren in person for three years. | c5_grandkids_q c5_grandkids
Sam | Sam's mother is visiting from Lagos for three weeks in July. | c5_mum_visit
Sam | Sam's kitchen was finished at the end of June, six weeks late. | c5_kitchen_done
Rosa | Rosa sang in the choir concert in July. | c5_concert_thu c5_concert
Rosa | Rosa will miss the choir's Christmas concert because she will be in Chile. | c5_miss_concert
Sam | Sam sprained his ankle at football and has given up football. | c5_ankle c5_football_stop
Rosa | Rosa booked flights to Santiago from 5 December to 2 January. | c5_flights c5_flight_dates
Sam | Sam will look after Rosa's parrot Pancho while she is in Chile. | c5_we_have_him c5_pancho_sam_q c5_pancho_sam
Sam | Sam swims at the lido on Sunday mornings. | c5_sam_swim
Sam | Sam's twins started nursery on 8 September. | c5_nursery
Sam | Sam turned down a senior UX research job in London because it meant going into the office. | c5_job_offer c5_wfh
Rosa | Rosa gave up half of her allotment plot because of her back. | c5_half_plot
Rosa | Rosa is not sure whether she will grow twenty or twenty-five tomato plants next year. | c5_next_year_maybe_q c5_next_year_maybe
Rosa | Rosa's blood sugar test was her best in five years. | c5_sugar_better
Rosa | Rosa has not had a custard cream since July. | c5_no_custard
Sam | Sam does not think he will drink at New Year. | c5_maybe_continue
Rosa | Rosa's parrot Pancho eats grapes but must not have avocado. | c5_pancho_food
Rosa | Rosa is taking the train to Heathrow because she no longer drives. | c5_train_airport_q c5_train_airport
Sam | Sam will drive Rosa to the station for her flight. | c5_drive_station
Rosa | Rosa's parrot Pancho hates strangers. | c5_strangers
Rosa | Rosa's parrot Pancho says "hola guapa", taught by her late husband. | c5_hola
Sam | Sam baked sugar-free oat biscuits for Rosa. | c5_oat_biscuits
Rosa | A young couple from the flats took over half of Rosa's plot to grow squash. | c5_squash_q c5_squash
Sam | Sam's daughter Kemi went trick-or-treating as a witch and his son Tayo as a dinosaur. | c5_costumes
Sam | Sam's son Tayo cried on the first day of nursery; Kemi did not. | c5_tayo_cried
Sam | Sam's mother has never liked him drinking. | c5_mum_drinking_q c5_mum_drinking
Rosa | Rosa's parrot Pancho learned to say "Tayo". | c5_pancho_tayo
Rosa | Rosa used to refuse to use a smartphone; she is not a fan but now uses one. | c5_phone_q c5_phone
Sam | Sam is not a fan of weeding but carries the watering cans. | c5_weeding
""",
        qs="""
s | What is Rosa's parrot called? | Pancho | c5_pancho_name c5_african_grey
s | What kind of bird is Pancho? | an African grey parrot | c5_african_grey
s | What are the names of Sam's twins? | Kemi and Tayo | c5_twins
s | What does Sam's wife do? | she is a surgeon | c5_ada
s | How many tomato plants does Rosa grow? | forty | c5_tomatoes c5_widow
s | What type of diabetes does Rosa have? | type two | c5_diabetes_q c5_diabetes
s | What car did Rosa sell? | a Fiesta | c5_sell_car
s | Why was Sam's kitchen delayed? | the worktop arrived three inches too short | c5_kitchen_delay
s | Which choir did Rosa join? | the choir at St Mary's | c5_choir
s | What is Sam allergic to? | wasp stings | c5_wasp
s | What did Sam make for Rosa? | an oak bench | c5_bench_word c5_bench
s | Where does Rosa's daughter live? | Santiago, Chile | c5_ines_chile c5_ines
s | What are Rosa's grandchildren called? | Mateo and Sofía | c5_ines
s | Where did Sam's mother fly in from? | Lagos | c5_mum_visit
s | How did Sam hurt his ankle? | playing five-a-side football | c5_ankle
s | Where does Sam swim? | at the lido on Sunday mornings | c5_sam_swim
s | What job did Sam turn down? | a senior UX research role in London | c5_job_offer
s | What food is poisonous to Pancho? | avocado | c5_pancho_food
s | How is Rosa getting to Heathrow? | by train, with Sam driving her to the station | c5_train_airport_q c5_train_airport c5_drive_station
m | Why did Rosa remove the wasp nest before Sam came to the allotment? | Sam is allergic to wasp stings | c5_wasp c5_nest_gone
m | What wood did Sam use for Rosa's bench and where did it come from? | oak from the old beams the builders took out of his kitchen | c5_bench c5_kitchen
m | Why did Rosa stop driving and how will she get to the airport? | her eyes after the cataract operation, lights make halos at night; she will take the train | c5_cataract c5_stop_driving c5_sell_car c5_train_airport_q c5_train_airport
m | Who will look after Pancho while Rosa is in Chile, and what must they not feed him? | Sam's family; no avocado | c5_we_have_him c5_pancho_sam_q c5_pancho_sam c5_pancho_food
m | What sport did Sam give up and what did he take up instead? | five-a-side football after an ankle sprain; swimming at the lido | c5_football_stop c5_sam_swim
m | What did Rosa change that improved her blood sugar? | she stopped buying custard creams | c5_no_custard c5_sugar_better
m | Why did Sam turn down the London job? | it meant going in three days a week and he wants to work from home near the twins | c5_job_offer c5_wfh
t | When did Sam stop drinking alcohol? | at New Year 2025 | c5_dry_year
t | When did Rosa have her cataract operation? | in March 2025 | c5_eye_hospital c5_cataract
t | When was Sam's kitchen finished? | at the end of June 2025 | c5_kitchen_done
t | When did Sam's mother arrive from Lagos? | Monday 14 July 2025 | c5_mum_visit
t | When was Rosa's choir concert? | Thursday 17 July 2025 | c5_concert_thu
t | When does Rosa fly to Santiago and when does she come back? | 5 December 2025 to 2 January 2026 | c5_flight_dates
t | When did the twins start nursery? | 8 September 2025 | c5_nursery
t | Since when has Rosa not had a custard cream? | since July 2025 | c5_no_custard
t | When did Sam get stung by a wasp? | in August 2024 | c5_wasp
t | How long is it since Rosa saw her grandchildren in person, as of June 2025? | three years | c5_grandkids_q c5_grandkids
t | How long was Sam's kitchen delayed? | six weeks | c5_kitchen_done
n | Does Rosa still drive? | no, she stopped after her cataract operation | c5_stop_driving
n | Does Sam drink alcohol? | no, not since New Year 2025 | c5_dry_year c5_maybe_continue
n | Does Sam still play football? | no, he gave it up after spraining his ankle | c5_football_stop
n | Did Sam take the London job? | no, he turned it down | c5_job_offer
n | Will Rosa be at the choir's Christmas concert? | no, she will be in Chile | c5_miss_concert
n | Does Rosa still work her whole allotment plot? | no, she gave up half | c5_half_plot
n | Can Pancho eat avocado? | no, it is poison for parrots | c5_pancho_food
n | Does Rosa still eat custard creams? | no, not since July | c5_no_custard
n | Is Rosa sure how many tomatoes she will grow next year? | no, maybe twenty or twenty-five | c5_next_year_maybe_q c5_next_year_maybe
n | Were there wasps at the allotment this summer? | no, not one | c5_nest_gone c5_no_wasps_summer_q c5_no_wasps_summer
a | What is the name of Sam's dog? | not mentioned | 
a | When did Rosa's husband remarry? | not mentioned | 
a | Which marathon did Sam run? | not mentioned | 
a | When did Ada leave the hospital? | not mentioned | 
a | What did Rosa buy in Santiago? | not mentioned | 
a | What breed is Rosa's cat? | not mentioned | 
a | Which school did Kemi and Tayo start in London? | not mentioned | 
o | When did Sam have a cataract operation? | not mentioned | c5_eye_hospital c5_cataract
o | What type of diabetes does Sam have? | not mentioned | c5_diabetes_q c5_diabetes
o | When did Rosa stop drinking alcohol? | not mentioned | c5_dry_year
o | What is Rosa allergic to? | not mentioned | c5_wasp
o | How did Rosa sprain her ankle? | not mentioned | c5_ankle
o | Which choir does Sam sing in? | not mentioned | c5_choir
o | When is Sam flying to Santiago? | not mentioned | c5_flights
o | What is Sam's parrot called? | not mentioned | c5_pancho_name c5_african_grey
o | Why did Rosa turn down a job in London? | not mentioned | c5_job_offer
s | How old is Rosa? | seventy-three | c5_sell_car
s | What does Pancho say that Rosa's husband taught him? | "hola guapa" | c5_hola
s | What did Sam bake for Rosa? | sugar-free oat biscuits | c5_oat_biscuits
s | Who took over half of Rosa's allotment plot? | a young couple from the flats who want to grow squash | c5_squash_q c5_squash
s | What are the twins dressing up as for Halloween? | Kemi as a witch, Tayo as a dinosaur | c5_costumes
s | Which twin cried on the first day of nursery? | Tayo | c5_tayo_cried
s | What new word did Pancho learn in October? | "Tayo" | c5_pancho_tayo
m | Why can't Pancho go to strangers while Rosa is away, and who will have him? | he hates strangers; Sam's family, whom he knows | c5_strangers c5_we_have_him
m | How did Rosa's attitude to smartphones change? | she used to refuse to touch one; now she video-calls her daughter by herself | c5_video c5_phone_q c5_phone
n | Does Sam like weeding? | no, he is not a fan, but he carries the watering cans | c5_weeding
n | Does Sam's mother approve of him drinking? | no, she has never liked it | c5_mum_drinking_q c5_mum_drinking
n | Does Pancho like strangers? | no, he hates them | c5_strangers
a | When did Rosa adopt Pancho? | not mentioned | 
a | What did Sam's mother cook in the new kitchen? | not mentioned | 
o | How old are Sam's grandchildren? | not mentioned | c5_grandkids_q c5_grandkids
o | When did Rosa start swimming at the lido? | not mentioned | c5_sam_swim
o | What did Rosa build for Sam? | not mentioned | c5_bench
""",
    )
)


# c6: long-distance friends, a chef in Osaka and a vet in Ireland -------------------------------------
CONVS.append(
    dict(
        id="c6",
        speakers=("Kenji", "Lucy"),
        relation="long-distance friends from a language exchange",
        script="""
== 2024-05-12
LUCY: Kenji! It's been ages. How's the hotel kitchen?
KENJI: I handed in my notice on Friday. After eight years at the Grand, I'm leaving in June. [[c6_leave_hotel]]
LUCY: What? Why?
KENJI: I'm going to open my own ramen shop. It's been my dream since I was twenty. [[c6_ramen_dream]]
LUCY: That's incredible. In Osaka?
KENJI: In Osaka, yes. I'm looking at small places, ten or twelve seats. Nothing bigger. [[c6_osaka]]
LUCY: I'll be your first customer. Well, your first foreign customer.
KENJI: How is life at the practice?
LUCY: Mad. I'm the only large-animal vet for half of County Meath, so it's cows at two in the morning. [[c6_vet]]
KENJI: You love it though.
LUCY: I do. And I've done something a bit daft. I've taken on a retired racehorse. A mare called Clover. [[c6_clover]]
KENJI: A horse! Where do you keep a horse in Dublin?
LUCY: A livery yard outside the city. She was going to be put down because of an old tendon injury. I couldn't let it happen. [[c6_clover_why]]
KENJI: You are too kind. I am honestly scared of horses. They are so big. [[c6_kenji_horses]]
LUCY: Clover is a gentle giant. You'd love her.
KENJI: I'll love her from a distance. Also I've started surfing, can you believe it?
LUCY: You? You hate cold water. [[c6_cold_water]]
KENJI: Lessons in Wakayama every Sunday. I've fallen off the board about a hundred times. [[c6_surf_start]]
LUCY: Send me a video of the hundred and first.
KENJI: Never.
== 2024-06-23
LUCY: I have to tell you something before Instagram does.
KENJI: Tell me!
LUCY: Niamh proposed. On the beach at Inch, on Saturday the 15th. I said yes. [[c6_engaged]]
KENJI: Congratulations! I always liked Niamh. When is the wedding?
LUCY: Next August, in Kerry, near her family. You have to come. [[c6_wedding_plan]]
KENJI: I'll be there, even if I have to close the shop.
LUCY: Have you found the shop yet?
KENJI: I think so. Nakazakicho, a quiet street near Umeda. An old coffee shop with a counter already. [[c6_location]]
LUCY: That sounds perfect.
KENJI: One problem. My doctor says my blood pressure is too high. He wants me to cut salt. [[c6_bp]]
LUCY: A ramen chef who can't eat salt.
KENJI: I taste the broth, I don't drink it. But yes, it's funny.
LUCY: And coffee? Coffee doesn't help blood pressure.
KENJI: I never drink coffee, only green tea. Coffee makes my hands shake. [[c6_green_tea]]
LUCY: Are you taking medication? [[c6_bp_plan_q]]
KENJI: Not yet. He wants three months of less salt and more walking first. [[c6_bp_plan]]
LUCY: Then walk to the shop every day.
KENJI: It's forty minutes. Maybe. [[c6_walk_maybe]]
LUCY: I'll remind you every week.
KENJI: How is Clover? [[c6_follows_q]]
LUCY: Putting on weight. She follows me around the field like a dog. [[c6_follows]]
KENJI: Still big. Still scary.
LUCY: You'll meet her one day.
== 2024-07-28
KENJI: A question for my menu. You can't eat wheat, right?
LUCY: Coeliac, yes. Gluten makes me very sick, so no wheat, barley or rye. [[c6_coeliac]]
KENJI: Then I'll make you a gluten-free noodle. Rice flour, maybe. When you visit, you'll eat ramen like everyone else. [[c6_gf_plan]]
LUCY: Kenji, that might be the nicest thing anyone has offered me.
KENJI: It's a challenge. I like challenges.
LUCY: How's the surfing?
KENJI: I stood up! For three seconds, two Sundays ago. Then I fell, but I stood up. [[c6_stood_up]]
LUCY: A legend. I've started something too: Japanese lessons. [[c6_japanese]]
KENJI: Really? Why?
LUCY: So I can read your menu when I come. A class on Tuesday evenings at the university. [[c6_japanese_class]]
KENJI: Say something.
LUCY: Watashi wa juui desu. I am a vet. [[c6_juui]]
KENJI: Perfect! Your accent is better than my Irish.
LUCY: You don't speak any Irish.
KENJI: Exactly.
LUCY: Are you still playing piano, by the way? You said you'd start again.
KENJI: Me? No, you are thinking of yourself. You play the piano, I never learned. [[c6_kenji_no_piano]]
LUCY: Ha, you're right. I play every evening, it's how I switch off after work. [[c6_piano]]
KENJI: Play at your wedding.
LUCY: Maybe. Niamh would like that.
== 2024-09-08
KENJI: The shop has a name. Kumo. It means cloud. [[c6_kumo]]
LUCY: I love it. When do you open? [[c6_opening_date_q]]
KENJI: The 1st of October, if the gas man comes on time. [[c6_opening_date]]
LUCY: Do you have staff? [[c6_staff_q]]
KENJI: One cook, Haruto, and me. My sister Yui will help on weekends. [[c6_staff]]
LUCY: A family business.
KENJI: And how is Clover?
LUCY: Not great. She's lame again, the old tendon. She's on box rest for a month. [[c6_clover_lame]]
KENJI: Poor Clover.
LUCY: She hates it. She kicks the door every morning.
KENJI: Any news for you?
LUCY: Big news. I got a job at a practice in Galway. Equine work only. I start on the 6th of January. [[c6_galway_job]]
KENJI: Galway! Is that far?
LUCY: Three hours across the country. Niamh can work from anywhere, so we're moving together. [[c6_niamh_remote]]
KENJI: And Clover? [[c6_clover_move_q]]
LUCY: She's coming. We'll find a field. [[c6_clover_move]]
KENJI: The surf season is nearly over here. I've been every Sunday all summer.
LUCY: You'll have no Sundays once the shop opens.
KENJI: I know. I'm trying not to think about it.
LUCY: How's the blood pressure? [[c6_walk_q]]
KENJI: Better. I walk to the shop now. Forty minutes each way. [[c6_walk]]
== 2024-10-20
LUCY: How's opening month? I saw the photos of the queue!
KENJI: Three weeks open, and there's a queue every night. I'm so tired, Lucy. [[c6_open]]
LUCY: Because it's good! What's on the menu?
KENJI: Shoyu ramen, a chicken paitan, and a vegetarian one with mushroom broth. [[c6_menu]]
LUCY: No tonkotsu?
KENJI: No. Tonkotsu broth needs twelve hours of boiling and I don't have the space. [[c6_no_tonkotsu]]
LUCY: And surfing?
KENJI: I stopped. The shop is open Sundays, and I'm too tired anyway. Maybe next summer. [[c6_surf_stop]]
LUCY: I'm sorry. You were just getting good.
KENJI: There's a soba shop next door. I can't even go there to relax, I'm allergic to buckwheat. [[c6_buckwheat]]
LUCY: A Japanese chef allergic to buckwheat!
KENJI: My mother says it's a curse. What about the move?
LUCY: We're packing. And I sold my piano. The new house is tiny, there's no room for it. [[c6_piano_sold]]
KENJI: Oh no. You loved it.
LUCY: I did. I'll get a keyboard one day, maybe.
KENJI: And Clover?
LUCY: Sound again, she's off box rest. She'll go to a field near Oranmore in December. [[c6_oranmore]]
KENJI: Good girl.
LUCY: How's the Japanese going to survive the move? I'll find a class in Galway, I hope.
KENJI: Practise with me.
== 2024-12-01
LUCY: We're in Galway! The house is full of boxes and Niamh is already in love with the sea.
KENJI: And you start work in January?
LUCY: The 6th. I have a month to unpack and get Clover settled.
KENJI: Did she travel well?
LUCY: Like a star. She walked off the trailer and started eating immediately.
KENJI: Very sensible horse.
LUCY: The bad news: there's no Japanese class here. So I've stopped for now. [[c6_japanese_stop]]
KENJI: Then you must practise with me every week. I'm serious.
LUCY: Deal. How are you?
KENJI: Good news from the doctor. My blood pressure is normal now. No medication needed. [[c6_bp_normal]]
LUCY: Kenji! All that walking.
KENJI: And less salt. I taste the broth with a tiny spoon now.
LUCY: When are you coming to Ireland? You always say next year. [[c6_visit_plan_q]]
KENJI: March! I'll close the shop for ten days in March and visit you. [[c6_visit_plan]]
LUCY: Really? I'll take time off. I'll show you the Cliffs of Moher.
KENJI: And the horse.
LUCY: And the horse. From a distance.
KENJI: Can you find me a gluten-free shop in Galway? I want to cook ramen for you there.
LUCY: There's one in the city centre. I'll take you.
KENJI: Perfect.
== 2025-01-19
KENJI: I have bad news. I can't come in March. [[c6_cant_march]]
LUCY: Oh no. What happened?
KENJI: Haruto quit. He's moving to Tokyo. Without him I can't close the shop for ten days. [[c6_haruto_quit]]
LUCY: I'm sorry, Kenji. That's hard.
KENJI: I'll come in August for the wedding instead. That one I won't miss. [[c6_visit_august]]
LUCY: Promise?
KENJI: Promise. I'll hire someone new before then.
LUCY: My first two weeks at the practice were wild. Three foals and a stallion with colic. [[c6_first_weeks]]
KENJI: How does anyone treat a stallion?
LUCY: Carefully. And with sedation.
KENJI: I tested the gluten-free noodles this week. Rice flour and potato starch. [[c6_gf_test]]
LUCY: And?
KENJI: Too soft. They break in the broth. I need more time. [[c6_gf_soft]]
LUCY: Take as long as you need. I'm not going anywhere.
KENJI: Still no Japanese class?
LUCY: No. I'm too tired after work anyway.
KENJI: Then every Sunday, a call with me, in Japanese. [[c6_sunday_calls]]
LUCY: Every Sunday? Fine. Ten minutes.
KENJI: Fifteen.
LUCY: Fine, fifteen. [[c6_fifteen]]
== 2025-02-23
LUCY: Okaerinasai, Kenji! I mean, konnichiwa. I always mix them up.
KENJI: Ha! Close. The Sunday calls are helping.
LUCY: How's Kumo?
KENJI: We were in Kansai Walker magazine last week! Best new ramen in Osaka. [[c6_magazine]]
LUCY: Kenji! I'm so proud of you.
KENJI: The queue is even longer now. I hired a new cook, Mei. She starts in March. [[c6_mei]]
LUCY: So August is safe?
KENJI: August is safe. I've booked my flights. Osaka to Dublin, the 20th of August. [[c6_flight_booked]]
LUCY: The wedding is the 23rd. Perfect. [[c6_wedding_date]]
KENJI: Can I ask you something? Can I cook at the wedding?
LUCY: Cook? Ramen, at an Irish wedding?
KENJI: For the late-night food. Gluten-free, so the bride can eat it. [[c6_wedding_ramen]]
LUCY: Niamh will cry. Yes. A thousand times yes.
KENJI: Then I have six months to get the noodles right.
LUCY: How is the blood pressure?
KENJI: Still normal. I walk every day, even in the rain.
LUCY: Are you surfing again when summer comes? [[c6_no_surf_q]]
KENJI: I don't think so. Kumo is my surfboard now. [[c6_no_surf]]
LUCY: That's the cheesiest thing you've ever said.
KENJI: I know. I'm tired.
LUCY: And I bought a keyboard last weekend! I'm playing again, just in the evenings. [[c6_keyboard]]
KENJI: Play at the wedding, then.
LUCY: Maybe just one song.
""",
        obs="""
Kenji | Kenji handed in his notice at the Grand hotel after eight years and leaves in June. | c6_leave_hotel
Kenji | Kenji is opening his own ramen shop in Osaka, his dream since he was twenty. | c6_ramen_dream c6_osaka
Lucy | Lucy is the only large-animal vet for half of County Meath. | c6_vet
Lucy | Lucy took on a retired racehorse, a mare called Clover, who was going to be put down. | c6_clover c6_clover_why
Kenji | Kenji is scared of horses. | c6_kenji_horses
Kenji | Kenji started surfing lessons in Wakayama on Sundays. | c6_surf_start
Lucy | Lucy got engaged to Niamh on the beach at Inch. | c6_engaged
Lucy | Lucy and Niamh plan to marry next August in Kerry. | c6_wedding_plan
Lucy | Lucy's wedding is on 23 August. | c6_wedding_date
Kenji | Kenji found a location for his shop in Nakazakicho near Umeda. | c6_location
Kenji | Kenji's doctor told him to cut salt because of high blood pressure. | c6_bp c6_bp_plan_q c6_bp_plan
Lucy | Lucy is coeliac and cannot eat wheat, barley or rye. | c6_coeliac
Kenji | Kenji plans to make gluten-free noodles for Lucy. | c6_gf_plan
Kenji | Kenji stood up on a surfboard for three seconds. | c6_stood_up
Lucy | Lucy started Japanese lessons on Tuesday evenings at the university. | c6_japanese c6_japanese_class
Lucy | Lucy plays the piano every evening to switch off after work. | c6_piano
Kenji | Kenji never learned to play the piano. | c6_kenji_no_piano
Kenji | Kenji named his ramen shop Kumo, which means cloud. | c6_kumo
Kenji | Kenji planned to open Kumo on 1 October. | c6_opening_date_q c6_opening_date
Kenji | Kenji's staff are a cook named Haruto and his sister Yui on weekends. | c6_staff_q c6_staff
Lucy | Lucy's horse Clover went lame again and was on box rest for a month. | c6_clover_lame
Lucy | Lucy got a job at an equine practice in Galway, starting on 6 January. | c6_galway_job
Lucy | Lucy is taking Clover with her to Galway. | c6_clover_move_q c6_clover_move
Kenji | Kenji walks forty minutes each way to his shop. | c6_walk_q c6_walk
Kenji | Kenji's shop has had a queue every night since it opened. | c6_open
Kenji | Kenji's menu has shoyu, chicken paitan and a vegetarian mushroom ramen. | c6_menu
Kenji | Kenji does not serve tonkotsu because it needs twelve hours of boiling. | c6_no_tonkotsu
Kenji | Kenji stopped surfing after opening the shop. | c6_surf_stop
Kenji | Kenji is allergic to buckwheat. | c6_buckwheat
Lucy | Lucy sold her piano because the new house is too small. | c6_piano_sold
Lucy | Lucy's horse Clover will go to a field near Oranmore. | c6_oranmore
Lucy | Lucy stopped Japanese lessons because there is no class in Galway. | c6_japanese_stop
Lucy | Lucy practises Japanese with Kenji on a call every Sunday. | c6_sunday_calls
Kenji | Kenji's blood pressure is normal now without medication. | c6_bp_normal
Kenji | Kenji planned to visit Ireland for ten days in March. | c6_visit_plan_q c6_visit_plan
Kenji | Kenji cancelled his March visit to Ireland because his cook Haruto quit. | c6_cant_march c6_haruto_quit
Kenji | Kenji will come to Ireland in August for Lucy's wedding. | c6_visit_august
Lucy | Lucy treated three foals and a stallion with colic in her first weeks in Galway. | c6_first_weeks
Kenji | Kenji's first gluten-free noodles, made with rice flour and potato starch, were too soft. | c6_gf_test c6_gf_soft
Kenji | Kenji's shop was named best new ramen in Osaka by Kansai Walker. | c6_magazine
Kenji | Kenji hired a new cook named Mei who starts in March. | c6_mei
Kenji | Kenji booked a flight from Osaka to Dublin for 20 August. | c6_flight_booked
Kenji | Kenji will cook gluten-free ramen as late-night food at Lucy's wedding. | c6_wedding_ramen
Kenji | Kenji doesn't think he will surf again this summer. | c6_no_surf_q c6_no_surf
Lucy | Lucy bought a keyboard and is playing again in the evenings. | c6_keyboard
Kenji | Kenji hates cold water, according to Lucy. | c6_cold_water
Lucy | Lucy's horse Clover follows her around the field like a dog. | c6_follows_q c6_follows
Lucy | Lucy's partner Niamh can work from anywhere, so they are moving to Galway together. | c6_niamh_remote
Kenji | Kenji was not sure he would walk the forty minutes to his shop. | c6_walk_maybe
Lucy | Lucy and Kenji's Sunday Japanese calls last fifteen minutes. | c6_sunday_calls c6_fifteen
Kenji | Kenji never drinks coffee, only green tea. | c6_green_tea
Lucy | Lucy can say "Watashi wa juui desu", I am a vet, in Japanese. | c6_juui
""",
        qs="""
s | Where did Kenji work before opening his shop? | the Grand hotel kitchen, for eight years | c6_leave_hotel
s | What kind of vet is Lucy? | a large-animal vet | c6_vet
s | What is the name of Lucy's horse? | Clover | c6_clover
s | Why was Clover going to be put down? | an old tendon injury | c6_clover_why
s | Where did Kenji take surfing lessons? | Wakayama | c6_surf_start
s | Who is Lucy engaged to? | Niamh | c6_engaged
s | Where did Niamh propose? | on the beach at Inch | c6_engaged
s | Where is Kenji's shop? | Nakazakicho, near Umeda in Osaka | c6_location
s | What is Kenji's shop called? | Kumo | c6_kumo
s | What does Kumo mean? | cloud | c6_kumo
s | Who works with Kenji at the shop? | a cook named Haruto, and his sister Yui on weekends | c6_staff_q c6_staff
s | Where is Lucy's new job? | a practice in Galway, equine work only | c6_galway_job
s | What ramen does Kumo serve? | shoyu, chicken paitan and a vegetarian mushroom ramen | c6_menu
s | What is Kenji allergic to? | buckwheat | c6_buckwheat
s | Which magazine featured Kumo? | Kansai Walker | c6_magazine
s | What is Kenji's new cook called? | Mei | c6_mei
s | What will Kenji cook at Lucy's wedding? | gluten-free ramen as late-night food | c6_wedding_ramen
s | Where will Clover live near Galway? | a field near Oranmore | c6_oranmore
m | Why does Kenji want to make gluten-free noodles? | Lucy is coeliac and he wants her to eat his ramen | c6_coeliac c6_gf_plan
m | Why did Kenji cancel his March trip and when will he come instead? | his cook Haruto quit; he will come in August for the wedding | c6_cant_march c6_haruto_quit c6_visit_august
m | How did Kenji bring his blood pressure down? | less salt and walking forty minutes each way to the shop | c6_bp_plan_q c6_bp_plan c6_walk_q c6_walk c6_bp_normal
m | Why did Lucy stop playing piano and did she start again? | she sold it because the new house is too small; she bought a keyboard in February 2025 | c6_piano_sold c6_keyboard
m | Why did Lucy stop her Japanese lessons and how does she practise now? | there is no class in Galway; a Sunday call in Japanese with Kenji | c6_japanese_stop c6_sunday_calls
m | Why did Kenji give up surfing? | the shop is open on Sundays and he is too tired | c6_surf_start c6_surf_stop
m | Who replaced Haruto at Kumo? | Mei, a new cook starting in March | c6_haruto_quit c6_mei
t | When did Kenji hand in his notice? | Friday 10 May 2024 | c6_leave_hotel
t | When did Niamh propose to Lucy? | Saturday 15 June 2024 | c6_engaged
t | When did Kumo open? | 1 October 2024 | c6_opening_date_q c6_opening_date c6_open
t | When does Lucy start in Galway? | 6 January 2025 | c6_galway_job
t | When is Lucy's wedding? | 23 August 2025 | c6_wedding_date
t | When does Kenji fly to Dublin? | 20 August 2025 | c6_flight_booked
t | When did Kenji first stand up on a surfboard? | Sunday 14 July 2024 (two Sundays before 28 July) | c6_stood_up
t | When was Kenji's blood pressure back to normal? | by the start of December 2024 | c6_bp_normal
t | When did Lucy sell her piano? | in October 2024, before the move | c6_piano_sold
t | How long had Kenji worked at the Grand? | eight years | c6_leave_hotel
t | Since when has Kenji dreamed of a ramen shop? | since he was twenty | c6_ramen_dream
t | When did Lucy buy a keyboard? | the weekend of 15-16 February 2025 | c6_keyboard
n | Does Kenji serve tonkotsu ramen? | no, it needs twelve hours of boiling | c6_no_tonkotsu
n | Can Lucy eat wheat noodles? | no, she is coeliac | c6_coeliac
n | Is Kenji still surfing? | no, he stopped when the shop opened | c6_surf_stop c6_no_surf_q c6_no_surf
n | Does Kenji play the piano? | no, he never learned | c6_kenji_no_piano
n | Does Lucy still go to a Japanese class? | no, there is no class in Galway | c6_japanese_stop
n | Does Kenji take blood pressure medication? | no, he never needed it | c6_bp_plan_q c6_bp_plan c6_bp_normal
n | Did Kenji visit Ireland in March 2025? | no, he cancelled because Haruto quit | c6_cant_march c6_haruto_quit
n | Can Kenji eat soba? | no, he is allergic to buckwheat | c6_buckwheat
n | Does Kenji like horses? | no, he is scared of them | c6_kenji_horses
n | Does Lucy still own a piano? | no, she sold it (she bought a keyboard later) | c6_piano_sold c6_keyboard
n | Were Kenji's first gluten-free noodles good enough? | no, they were too soft and broke | c6_gf_test c6_gf_soft
a | What is the name of Kenji's dog? | not mentioned | 
a | When did Kenji get married? | not mentioned | 
a | Which restaurant did Lucy open in Galway? | not mentioned | 
a | When did Lucy run the Dublin marathon? | not mentioned | 
a | What did Kenji buy at the Cliffs of Moher? | not mentioned | 
a | What is the name of Lucy's cat? | not mentioned | 
a | When did Niamh start her job at the Galway practice? | not mentioned | 
o | When did Kenji get engaged to Niamh? | not mentioned | c6_engaged
o | Why can't Lucy eat buckwheat? | not mentioned | c6_buckwheat
o | When did Lucy start surfing? | not mentioned | c6_surf_start
o | What is Kenji's horse called? | not mentioned | c6_clover
o | Why is Kenji coeliac? | not mentioned | c6_coeliac
o | When did Lucy's blood pressure go back to normal? | not mentioned | c6_bp_normal
o | What is Lucy's ramen shop called? | not mentioned | c6_kumo
o | When does Kenji start his job in Galway? | not mentioned | c6_galway_job
o | Which Japanese class does Kenji attend? | not mentioned | c6_japanese_class
s | What Japanese sentence did Lucy say to Kenji? | "Watashi wa juui desu" (I am a vet) | c6_juui
s | Why could Niamh move to Galway with Lucy? | she can work from anywhere | c6_niamh_remote
s | What did Lucy treat in her first weeks in Galway? | three foals and a stallion with colic | c6_first_weeks
s | Where is Haruto moving to? | Tokyo | c6_haruto_quit
s | How long are Lucy and Kenji's Sunday calls? | fifteen minutes | c6_sunday_calls c6_fifteen
s | What does Kenji drink instead of coffee? | green tea | c6_green_tea
s | How does Clover behave with Lucy in the field? | she follows Lucy around like a dog | c6_follows_q c6_follows
m | Why was it surprising that Kenji took up surfing? | Lucy says he hates cold water | c6_cold_water c6_surf_start
n | Was Kenji sure he would walk to the shop when Lucy suggested it? | no, it is forty minutes: "maybe" (he later did) | c6_walk_maybe c6_walk_q c6_walk
n | Does Kenji drink coffee? | no, never, only green tea | c6_green_tea
n | Did Kenji visit Lucy in Galway before the wedding? | no, he cancelled the March trip and will come in August | c6_haruto_quit c6_visit_august
a | When did Kenji open a second shop? | not mentioned | 
a | What did Niamh give Lucy as an engagement ring? | not mentioned | 
o | When did Lucy hand in her notice at the Grand? | not mentioned | c6_leave_hotel
o | Why is Lucy scared of horses? | not mentioned | c6_kenji_horses
o | Why does Lucy never drink coffee? | not mentioned | c6_green_tea
""",
    )
)


# ---------------------------------------------------------------------------------------------------
class Broken(Exception):
    pass


TAG = re.compile(r"\s*\[\[([^\]]+)\]\]\s*$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_script(conv):
    """Sessions and turns of one conversation, and the turn id of every tag."""
    cid, speakers = conv["id"], conv["speakers"]
    by_upper = {s.upper(): s for s in speakers}
    sessions, tags, errors = [], {}, []
    for raw in conv["script"].strip().splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("=="):
            date = line[2:].strip()
            if not DATE.match(date):
                errors.append(f"{cid}: bad session date {date!r}")
            sessions.append({"session": len(sessions) + 1, "date": date, "turns": []})
            continue
        if not sessions:
            errors.append(f"{cid}: turn before the first session: {line[:40]!r}")
            continue
        who, sep, text = line.partition(":")
        if not sep or who.strip().upper() not in by_upper:
            errors.append(f"{cid}: no known speaker in {line[:50]!r}")
            continue
        text = text.strip()
        found = TAG.search(text)
        turn_tags = []
        if found:
            turn_tags = [t.strip() for t in found.group(1).split(",") if t.strip()]
            text = text[: found.start()].rstrip()
        if "[[" in text or "]]" in text:
            errors.append(f"{cid}: stray tag brackets in {text[:50]!r}")
        session = sessions[-1]
        turn_id = f"D{session['session']}:{len(session['turns']) + 1}"
        session["turns"].append({"turn_id": turn_id, "speaker": by_upper[who.strip().upper()], "text": text})
        for tag in turn_tags:
            if tag in tags:
                errors.append(f"{cid}: tag {tag!r} used twice ({tags[tag]} and {turn_id})")
            tags[tag] = turn_id
    return sessions, tags, errors


def turn_key(turn_id):
    """'D3:12' -> (3, 12), for ordering turn ids."""
    return tuple(int(x) for x in turn_id[1:].split(":"))


def fields(line, n, where):
    parts = [p.strip() for p in line.split("|")]
    if len(parts) != n:
        raise Broken(f"{where}: expected {n} fields, got {len(parts)}: {line[:70]!r}")
    return parts


def build():
    conversations, observations, questions, errors = [], [], [], []
    ids = Counter()
    for conv in CONVS:
        cid = conv["id"]
        ids[cid] += 1
        sessions, tags, errs = parse_script(conv)
        errors += errs
        dates = [s["date"] for s in sessions]
        if dates != sorted(dates) or len(set(dates)) != len(dates):
            errors.append(f"{cid}: session dates not strictly increasing: {dates}")
        if not 6 <= len(sessions) <= 10:
            errors.append(f"{cid}: {len(sessions)} sessions (want 6-10)")
        n_turns = sum(len(s["turns"]) for s in sessions)
        if n_turns < 150:
            errors.append(f"{cid}: {n_turns} turns (want >= 150)")
        date_of = {t["turn_id"]: s["date"] for s in sessions for t in s["turns"]}
        split = "dev" if cid in DEV else "heldout"
        conversations.append(
            {
                "id": cid,
                "speakers": list(conv["speakers"]),
                "relation": conv["relation"],
                "split": split,
                "sessions": sessions,
            }
        )
        used = set()

        def resolve(tag_field, where):
            out = []
            for tag in tag_field.split():
                if tag not in tags:
                    errors.append(f"{where}: unknown evidence tag {tag!r}")
                    continue
                used.add(tag)
                if tags[tag] in out:
                    errors.append(f"{where}: evidence turn {tags[tag]} listed twice")
                out.append(tags[tag])
            return sorted(out, key=turn_key)

        pending = []
        for k, line in enumerate(ln for ln in conv["obs"].strip().splitlines() if ln.strip()):
            oid = f"{cid} observation line {k + 1}"
            try:
                who, text, tag_field = fields(line, 3, oid)
            except Broken as e:
                errors.append(str(e))
                continue
            turn_ids = resolve(tag_field, oid)
            if not turn_ids:
                errors.append(f"{oid}: observation without turns: {text!r}")
                continue
            if who not in conv["speakers"]:
                errors.append(f"{oid}: speaker {who!r} is not in {cid}")
            if not text.startswith(who) and who.split()[0] not in text:
                errors.append(f"{oid}: note does not name its speaker {who!r}: {text!r}")
            pending.append(
                {
                    "id": None,
                    "conversation": cid,
                    "speaker": who,
                    "text": text,
                    "turn_ids": turn_ids,
                    "date": max(date_of[t] for t in turn_ids),
                    "split": split,
                }
            )
        # numbered in the order a memory would store them: by session date, then by first turn
        pending.sort(key=lambda o: (o["date"], turn_key(o["turn_ids"][0])))
        for k, o in enumerate(pending):
            o["id"] = f"{cid}-o{k + 1:03d}"
            ids[o["id"]] += 1
            observations.append(o)
        for k, line in enumerate(ln for ln in conv["qs"].strip().splitlines() if ln.strip()):
            qid = f"{cid}-q{k + 1:03d}"
            try:
                code, question, answer, tag_field = fields(line, 4, qid)
            except Broken as e:
                errors.append(str(e))
                continue
            if code not in CATEGORY:
                errors.append(f"{qid}: unknown category code {code!r}")
                continue
            evidence = resolve(tag_field, qid)
            if not question.endswith("?") or not answer:
                errors.append(f"{qid}: question must end with '?' and have an answer")
            if code == "a" and (evidence or answer != "not mentioned"):
                errors.append(f"{qid}: never-happened question needs no evidence and 'not mentioned'")
            if code == "o" and (not evidence or answer != "not mentioned"):
                errors.append(f"{qid}: other-person question needs the other person's turns and 'not mentioned'")
            if code in "stn" and not evidence:
                errors.append(f"{qid}: answerable question without evidence")
            if code == "m" and len(evidence) < 2:
                errors.append(f"{qid}: multi-hop question with fewer than two evidence turns")
            ids[qid] += 1
            q = {
                "id": qid,
                "conversation": cid,
                "question": question,
                "answer": answer,
                "evidence": evidence,
                "category": CATEGORY[code],
                "split": split,
            }
            if code == "o":
                q["other_person"] = True
            questions.append(q)
        # every evidence turn of an answerable question is stated by some observation, so a memory that
        # stores only the observations can still hold the answer
        noted = {t for o in observations if o["conversation"] == cid for t in o["turn_ids"]}
        for q in questions:
            if q["conversation"] == cid and q["category"] != "adversarial":
                lost = [t for t in q["evidence"] if t not in noted]
                if lost:
                    errors.append(f"{q['id']}: evidence turns {lost} are in no observation")
        unused = sorted(set(tags) - used)
        if unused:
            errors.append(f"{cid}: tags no note or question uses: {unused}")
    errors += [f"duplicate id {i}" for i, n in ids.items() if n > 1]
    texts = Counter((q["conversation"], q["question"].lower()) for q in questions)
    errors += [f"duplicate question {t}" for t, n in texts.items() if n > 1]
    otexts = Counter((o["conversation"], o["text"].lower()) for o in observations)
    errors += [f"duplicate observation {t}" for t, n in otexts.items() if n > 1]
    return conversations, observations, questions, errors


def counts(conversations, observations, questions):
    lines = ["| conversation | split | sessions | turns | observations | questions |", "|---|---|---|---|---|---|"]
    for c in conversations:
        nt = sum(len(s["turns"]) for s in c["sessions"])
        no = sum(o["conversation"] == c["id"] for o in observations)
        nq = sum(q["conversation"] == c["id"] for q in questions)
        lines.append(
            f"| {c['id']} ({' & '.join(c['speakers'])}) | {c['split']} | {len(c['sessions'])} | {nt} | {no} | {nq} |"
        )
    cats = ["single-hop", "multi-hop", "temporal", "negation", "adversarial"]
    lines += ["", "| split | " + " | ".join(cats) + " | of which other person | all |", "|---" * (len(cats) + 3) + "|"]
    for split in ("dev", "heldout", None):
        qs = [q for q in questions if split is None or q["split"] == split]
        row = [str(sum(q["category"] == c for q in qs)) for c in cats]
        lines.append(
            f"| {split or 'all'} | "
            + " | ".join(row)
            + f" | {sum(bool(q.get('other_person')) for q in qs)} | {len(qs)} |"
        )
    return "\n".join(lines)


def main():
    conversations, observations, questions, errors = build()
    if errors:
        print(f"{len(errors)} problems; nothing written:", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        sys.exit(1)
    print(counts(conversations, observations, questions))
    if "--check" in sys.argv:
        return
    for name, rows in (
        ("conversations.jsonl", conversations),
        ("observations.jsonl", observations),
        ("questions.jsonl", questions),
    ):
        with open(HERE / name, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print("wrote conversations.jsonl, observations.jsonl, questions.jsonl in", HERE)


if __name__ == "__main__":
    main()
